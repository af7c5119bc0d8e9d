"""Reasons that say what to fix (issue 25, defect 6): a role's failure is told in envevo's settings, with its cause.

pydantic-ai says "Increase the `max_tokens` model setting" (envevo's is `max_output_tokens` under
[llm.roles.<role>]; `[llm] max_tokens` is the lineage budget), "incomplete JSON" when no JSON was produced, and
"Exceeded maximum output retries (N)" without what was wrong.
"""

import asyncio

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from envevo.llm import LLMRuntime, LLMSettings, RoleFailed
from tests.fakes.openai_server import FakeOpenAI, Script, error


class Answer(BaseModel):
    ok: bool
    n: int


def fails(reply, *, role="judge", **settings) -> str:
    def answer(messages, info: AgentInfo) -> ModelResponse:
        return reply(info)

    rt = LLMRuntime(LLMSettings(**settings), models={role: FunctionModel(answer)})
    with pytest.raises(RoleFailed) as e:
        asyncio.run(rt.run(rt.agent(role, Answer, "answer"), "q", role=role))
    return str(e.value)


def test_an_answer_cut_before_any_json_is_not_called_incomplete_json():
    reason = fails(lambda i: ModelResponse(parts=[TextPart("Let me think step by step about the task")],
                                           finish_reason="length"), output_mode="native")
    assert "incomplete JSON" not in reason and "max_tokens" not in reason
    assert reason == ("judge: the answer was cut (the output cap of 24576 tokens, or the server's context for prompt + "
                      "answer) before any JSON began; raise max_output_tokens under [llm.roles.judge], or serve a longer "
                      "context")


def test_cut_json_names_envevos_setting_not_pydantic_ais():
    reason = fails(lambda i: ModelResponse(parts=[TextPart('{"ok": tr')], finish_reason="length"),
                   role="proposer", output_mode="native", roles={"proposer": {"max_output_tokens": 300}})
    assert "Increase the `max_tokens` model setting" not in reason
    assert "(300) exceeded while generating structured output, resulting in incomplete JSON" in reason
    assert reason.endswith("Raise max_output_tokens under [llm.roles.proposer], or simplify the prompt.")


def test_a_tool_call_cut_by_the_cap_names_envevos_setting():
    reason = fails(lambda i: ModelResponse(parts=[ToolCallPart(i.output_tools[0].name, '{"ok": tr')],
                                           finish_reason="length"), role="reviewer")
    assert "incomplete arguments" in reason and "Raise max_output_tokens under [llm.roles.reviewer]" in reason
    assert "`max_tokens`" not in reason


def test_exceeded_output_retries_carries_the_last_validation_error():
    reason = fails(lambda i: ModelResponse(parts=[ToolCallPart(i.output_tools[0].name, {"ok": True})]),
                   output_retries=1)
    assert reason == "judge: Exceeded maximum output retries (1); the last answer was rejected: n: Field required"
    reason = fails(lambda i: ModelResponse(parts=[TextPart('{"ok": true, "n": "many"}')]), output_mode="native",
                   output_retries=0)
    assert reason.startswith("judge: Exceeded maximum output retries (0); the last answer was rejected: n: Input should be")


def test_a_request_over_the_servers_context_window_names_the_cap_to_lower():
    message = ("This model's maximum context length is 32768 tokens. However, your request has 10000 input tokens "
               "plus 24576 'max_tokens'. Please reduce one or the other.")
    with FakeOpenAI(Script(judge=[error(400, message)])) as server, override_allow_model_requests(True):
        rt = LLMRuntime(LLMSettings(model="openai:fake-model", base_url=server.url, max_retries=0))
        with pytest.raises(RoleFailed, match=r"\(lower max_output_tokens under \[llm.roles.judge\], or serve a longer context\)"):
            asyncio.run(rt.run(rt.agent("judge", Answer, "envevo-role: judge"), "q", role="judge"))
