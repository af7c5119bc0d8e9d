"""Scripted pydantic-ai models for role unit tests (FunctionModel under the hood, no network).

A script is a list of steps, served in order, one per model request:
- a dict: the structured answer (a call of the agent's output tool with these arguments);
- a `Calls`: tool calls, e.g. Calls(("write_file", {"path": "a", "content": "b"}));
- a str: a plain-text reply (what a refusal looks like to a structured-output agent);
- an Exception: raised by the model (e.g. a 429 as pydantic-ai's ModelHTTPError);
- a callable(messages, info): returns one of the above, for replies that depend on the conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage


@dataclass
class Calls:
    calls: tuple[tuple[str, dict | str], ...]

    def __init__(self, *calls: tuple[str, dict | str]):
        self.calls = calls


class ScriptExhausted(AssertionError):
    pass


def _usage(messages: list[ModelMessage]) -> RequestUsage:
    size = sum(len(str(p)) for m in messages for p in m.parts)
    return RequestUsage(input_tokens=max(1, size // 4), output_tokens=25)


def scripted(*steps, name: str = "scripted") -> FunctionModel:
    queue = list(steps)
    seen: list[list[ModelMessage]] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if not queue:
            raise ScriptExhausted(f"model {name}: no scripted reply left (request {len(seen)})")
        step = queue.pop(0)
        if callable(step) and not isinstance(step, Calls | dict | str):
            step = step(messages, info)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, dict):
            parts = [ToolCallPart(info.output_tools[0].name, step)]
        elif isinstance(step, Calls):
            parts = [ToolCallPart(n, a) for n, a in step.calls]
        else:
            parts = [TextPart(step)]
        return ModelResponse(parts=parts, usage=_usage(messages), model_name=name)

    model = FunctionModel(fn, model_name=name)
    model.seen = seen  # type: ignore[attr-defined]
    model.queue = queue  # type: ignore[attr-defined]
    return model


def tool_returns(messages: list[ModelMessage]) -> list[str]:
    """Every tool result the model has been sent so far, oldest first."""
    return [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def last_prompt(messages: list[ModelMessage]) -> str:
    """All text the model was sent in the latest request (user prompt or retry prompts)."""
    return "\n".join(str(getattr(p, "content", "")) for p in messages[-1].parts)


Step = dict | Calls | str | Exception | Callable
