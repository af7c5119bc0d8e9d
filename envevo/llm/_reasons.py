"""One line that says what to fix, for a role whose model gave no usable answer.

pydantic-ai's own wording speaks pydantic-ai's settings and hides the cause; envevo's user edits envevo.toml:

- "Increase the `max_tokens` model setting": envevo's setting is `max_output_tokens` under `[llm.roles.<role>]`
  (`[llm] max_tokens` is the lineage's token budget, a different thing);
- "Model token limit (N) exceeded … incomplete JSON" when the server's context, not the cap, may have cut the answer
  (prompt + answer filled a llama.cpp slot): both causes named, and where the cut fell (before any JSON began, a
  model still reasoning in plain text; inside its JSON; inside a tool call's arguments);
- "Exceeded maximum output retries (N)": the last validation error is appended, so the reason shows what was wrong;
- a server that refuses prompt + max_tokens beyond its context window (vLLM, SGLang): names the setting to lower;
- a plain-text role (the text-action Modifier) whose replies the cap cut: pydantic-ai raises nothing there, so the
  caller counts the cuts and `cut_replies` names the setting to raise.
"""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_ai.exceptions import ModelAPIError, OutputTokenLimitExceeded, ToolRetryError

_PYDANTIC_AI_FIX = ("Increase the `max_tokens` model setting, or simplify the prompt to result in a shorter response "
                    "that will fit within the limit.")
_CONTEXT_WORDS = ("context length", "context window", "maximum context")


def role_failure(e: Exception, role: str) -> str:
    """The reason for RoleFailed: pydantic-ai's message, told in envevo's settings, with its cause."""
    setting = f"max_output_tokens under [llm.roles.{role}]"
    text = _first_line(e)
    if isinstance(e, OutputTokenLimitExceeded):
        cap = text.partition("(")[2].partition(")")[0] or "its"
        where = ("before any JSON began" if _cut_before_json(e) else
                 "inside its tool call's arguments" if "incomplete arguments" in text else "inside its JSON")
        # finish_reason "length" comes from the output cap or from the server's context filling up (prompt + answer):
        # a llama.cpp slot of 16k cut a 4.6k-token answer to an 11.8k-token prompt (and a 5.0k one to 11.3k, inside
        # its JSON), well under a 24k cap.
        return (f"the answer was cut {where} (the output cap of {cap} tokens, or the server's context for prompt + "
                f"answer); raise {setting}, or serve a longer context")
    if _PYDANTIC_AI_FIX in text:
        return text.replace(_PYDANTIC_AI_FIX, f"Raise {setting}, or simplify the prompt.")
    if text.startswith("Exceeded maximum output retries"):
        last = _last_error(e.__cause__)
        return f"{text}; the last answer was rejected: {last}" if last else text
    if isinstance(e, ModelAPIError) and any(w in text.lower() for w in _CONTEXT_WORDS) and "token" in text.lower():
        return f"{text} (lower {setting}, or serve a longer context)"
    return text


def cut_replies(role: str, cuts: int, cap: int) -> str:
    """Why a plain-text role's replies fell short when the output cap cut `cuts` of them."""
    return (f"{cuts} of its replies were cut at the output cap of {cap} tokens; raise max_output_tokens under "
            f"[llm.roles.{role}]")


def _cut_before_json(e: OutputTokenLimitExceeded) -> bool:
    """A cut answer whose text never opened a JSON object or array (pydantic-ai calls it "incomplete JSON")."""
    cause = e.__cause__
    if not isinstance(cause, ValidationError):
        return False
    texts = [err.get("input") for err in cause.errors() if err.get("type") == "json_invalid"]
    return bool(texts) and all(isinstance(t, str) and "{" not in t for t in texts)  # every answer is an object


def _last_error(cause: BaseException | None) -> str:
    """The first validation error in the cause chain (`field: message`), or its message's first line."""
    for _ in range(3):
        if cause is None:
            return ""
        if isinstance(cause, ValidationError):
            return _describe(cause.errors())
        if isinstance(cause, ToolRetryError):
            content = getattr(cause.tool_retry, "content", None)
            if isinstance(content, list) and content:
                return _describe(content)
            if isinstance(content, str) and content.strip():
                return content.strip().splitlines()[0][:200]
        cause = cause.__cause__
    return ""


def _describe(errors: list) -> str:
    first = errors[0] if isinstance(errors[0], dict) else {"msg": str(errors[0])}
    loc = ".".join(str(p) for p in first.get("loc") or ())
    msg = str(first.get("msg", "")).strip()
    if first.get("type") == "json_invalid" and isinstance(first.get("input"), str):
        msg += f" in {first['input'][:60]!r}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f"{loc}: {msg}" if loc else msg) + more


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:400]
