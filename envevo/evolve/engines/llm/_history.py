"""The Modifier's history, trimmed: old tool observations and old file contents shrink to a stub.

A Modifier run re-sends its whole history with every request, so every file it ever read and every file it ever
wrote would be paid for again on each of its 20–40 requests. Beyond the last `window` turns, a long tool result
keeps its start and end with a note saying how much was cut (read the file or run the command again to see it),
and a long string argument of an old tool call (a written file's content, an edit's text) becomes its size. The
first request (the plan and the feedback) and the model's own reasoning text are never trimmed. The structure
(every call with its result, ids intact) stays, so any provider accepts the trimmed history.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

WINDOW = 2  # the latest turns (a model response and the results sent back) kept whole
KEEP_CHARS = 400  # an observation up to this long is kept whole, however old
_EDGE = 100
MARK = "characters trimmed from this old observation"


def shorten(text: str) -> str:
    """An old observation's start and end, with a note of what was cut (already shortened text is kept)."""
    if len(text) <= KEEP_CHARS or MARK in text:
        return text
    cut = len(text) - 2 * _EDGE
    return f"{text[:_EDGE]}\n[… {cut} {MARK}; read or run again if you need it …]\n{text[-_EDGE:]}"


def _args(part: ToolCallPart) -> ToolCallPart:
    try:
        args = part.args_as_dict()
    except ValueError:
        return part
    short = {k: (f"[{len(v)} characters, sent earlier]" if isinstance(v, str) and len(v) > KEEP_CHARS else v)
             for k, v in args.items()}
    return part if short == args else replace(part, args=short)


def _request(m: ModelRequest, observations_as_prompts: bool) -> ModelRequest:
    parts = []
    for p in m.parts:
        if type(p) is ToolReturnPart and isinstance(p.content, str):  # not its tool-search subclasses
            p = replace(p, content=shorten(p.content))  # type: ignore[arg-type]
        elif observations_as_prompts and isinstance(p, UserPromptPart) and isinstance(p.content, str):
            p = replace(p, content=shorten(p.content))
        parts.append(p)
    return replace(m, parts=parts)


def trim_history(messages: list[ModelMessage], window: int = WINDOW, *,
                 observations_as_prompts: bool = False) -> list[ModelMessage]:
    """`messages` with everything older than the last `window` turns trimmed (the first request never is).

    `observations_as_prompts`: observations come back as user prompts (the text-action Modifier), not tool results.
    """
    cutoff = len(messages) - 2 * window
    out: list[ModelMessage] = []
    for i, m in enumerate(messages):
        if 0 < i < cutoff:
            if isinstance(m, ModelRequest):
                m = _request(m, observations_as_prompts)
            elif isinstance(m, ModelResponse):
                m = replace(m, parts=[_args(p) if isinstance(p, ToolCallPart) else p for p in m.parts])
        out.append(m)
    return out
