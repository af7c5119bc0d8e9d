"""A local fake OpenAI-compatible server for tests: scripted chat-completion replies, per envevo role.

A thin `tests.fakes.server.FakeServer`: `POST /v1/chat/completions` and `GET /v1/models`. Every envevo role prompt
starts with `envevo-role: <name>`; `Script` reads it from the request's system message and serves that role's next
scripted reply. A reply can be a fixed `Reply` or a function of the request JSON (e.g. a Modifier turn that depends
on a tool result). Faults are replies too: an HTTP error with headers (429 + retry-after), a delay longer than the
client's timeout, malformed tool-call JSON, a plain-text refusal.
"""

from __future__ import annotations

import json
import time

from tests.fakes import server
from tests.fakes.server import MODEL, Handler, Rendered, Reply, Step, delayed, role_in

__all__ = ["MODEL", "FakeOpenAI", "Handler", "Reply", "Script", "Step", "delayed", "error", "final",
           "last_user_text", "refusal_field", "role_of", "text", "tool_calls", "tool_results"]


def _usage(request: dict, message: dict) -> dict:
    prompt = len(json.dumps(request.get("messages", []))) // 4
    completion = max(1, len(json.dumps(message)) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class _Completion(Rendered):
    """A chat completion whose usage is computed from the request it answers."""

    def __init__(self, message: dict, finish_reason: str):
        super().__init__()
        self.message, self.finish_reason = message, finish_reason

    def render(self, request: dict) -> Reply:
        body = {
            "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", MODEL),
            "choices": [{"index": 0, "message": self.message, "finish_reason": self.finish_reason}],
            "usage": _usage(request, self.message),
        }
        return Reply(body=body, delay=self.delay)


def tool_calls(*calls: tuple[str, dict | str]) -> Rendered:
    """One assistant turn calling tools; an argument given as str is sent verbatim (e.g. malformed JSON)."""
    items = [{"id": f"call_{i}_{time.monotonic_ns()}", "type": "function",
              "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
             for i, (name, args) in enumerate(calls)]
    return _Completion({"role": "assistant", "content": None, "tool_calls": items}, "tool_calls")


def final(args: dict | str) -> Rendered:
    """The structured answer, through pydantic-ai's output tool."""
    return tool_calls(("final_result", args))


def text(content: str, finish_reason: str = "stop") -> Rendered:
    return _Completion({"role": "assistant", "content": content}, finish_reason)


def refusal_field(message: str) -> Rendered:
    """A refusal the way OpenAI's structured outputs send it: no content, a `refusal` string."""
    return _Completion({"role": "assistant", "content": None, "refusal": message}, "stop")


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(body={"error": {"message": message, "type": "error", "code": str(status)}}, status=status,
                 headers=headers or {})


def role_of(request: dict) -> str:
    for m in request.get("messages", []):
        if m.get("role") in ("system", "developer"):
            content = m.get("content")
            text_ = content if isinstance(content, str) else json.dumps(content)
            found = role_in(text_)
            if found:
                return found
    return "unknown"


def tool_results(request: dict) -> list[str]:
    """The contents of the tool-result messages in a request, oldest first."""
    return [m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "tool"]


def last_user_text(request: dict) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content")
    return content if isinstance(content, str) else json.dumps(content)


class Script(server.Script):
    """Scripted replies per role (read from the system or developer message), served in order."""

    role_of = staticmethod(role_of)
    error = staticmethod(error)


def _chunks(body: dict) -> list[dict]:
    """A chat completion as the stream of chunks the API sends for `stream: true` (with include_usage)."""
    choice = body["choices"][0]
    message = choice["message"]
    base = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas: list[dict] = [{"role": "assistant", "content": ""}]
    for key in ("content", "refusal"):
        if message.get(key):
            deltas.append({key: message[key]})
    for i, call in enumerate(message.get("tool_calls") or []):
        deltas.append({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                       "function": {"name": call["function"]["name"], "arguments": ""}}]})
        deltas.append({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]})
    chunks = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    chunks.append(base | {"choices": [], "usage": body.get("usage")})
    return chunks


class FakeOpenAI(server.ScriptedServer):
    """`with FakeOpenAI(script) as server:` then point a client at `server.url`. `owned_by` is who its model list says
    serves it ("llamacpp", "vllm", "sglang" for a server that enforces JSON schemas; none by default)."""

    url_path = "/v1"
    owned_by: str | None = None

    role_of = staticmethod(role_of)
    error = staticmethod(error)

    def get(self, path: str) -> Reply:
        if path.rstrip("/").endswith("/models"):
            owner = {"owned_by": self.owned_by} if self.owned_by else {}
            return Reply(body={"object": "list", "data": [{"id": m, "object": "model"} | owner for m in self.models]})
        return error(404, f"no route {path}")

    def encode(self, reply: Reply, request: dict | None) -> tuple[bytes, str]:
        """Server-sent events for a streamed request's completion; anything else (errors, garbage) as is."""
        body = reply.body
        if not (request or {}).get("stream") or reply.status != 200 or not isinstance(body, dict) or "choices" not in body:
            return super().encode(reply, request)
        events = "".join(f"data: {json.dumps(c)}\n\n" for c in _chunks(body)) + "data: [DONE]\n\n"
        return events.encode(), "text/event-stream"

    def post(self, path: str, request: dict) -> Reply:
        if not path.rstrip("/").endswith("/chat/completions"):
            return error(404, f"no route {path}")
        return self.handler(request)
