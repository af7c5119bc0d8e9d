"""A local fake Anthropic Messages API for tests: scripted replies per envevo role, like `openai_server`.

A thin `tests.fakes.server.FakeServer` serving `POST /v1/messages` (pydantic-ai calls the SDK's beta client, so
the path carries `?beta=true`) and `GET /v1/models`. Every envevo role prompt starts with `envevo-role: <name>`;
`Script` reads it from the request's top-level `system` (a string or a list of text blocks) and serves that role's
next scripted reply. Answers are Anthropic message objects: `content` blocks (`text`, `tool_use`), `stop_reason`
and `usage` {input_tokens, output_tokens}. A request with `"stream": true` (pydantic-ai streams behind the scenes
when a model's default `max_tokens` is large and the client has a custom timeout, as envevo's does) gets the same
message as server-sent events (`encode`). Faults are replies too: an HTTP error with headers (429 + retry-after),
a delay.
"""

from __future__ import annotations

import json
import time

from tests.fakes import server
from tests.fakes.server import MODEL, Handler, Rendered, Reply, Step, delayed, role_in

__all__ = ["INPUT_TOKENS", "MODEL", "OUTPUT_TOKENS", "FakeAnthropic", "Handler", "Reply", "Script", "Step",
           "delayed", "error", "final", "role_of", "sse_events", "system_text", "text", "tool_results", "tool_use"]

# Fixed so tests can assert exact metering: every scripted message reports these counts.
INPUT_TOKENS = 1234
OUTPUT_TOKENS = 56


class _Message(Rendered):
    """An assistant message; its id and model are filled in from the request it answers."""

    def __init__(self, content: list[dict], stop_reason: str, input_tokens: int = INPUT_TOKENS,
                 output_tokens: int = OUTPUT_TOKENS):
        super().__init__()
        self.content, self.stop_reason = content, stop_reason
        self.input_tokens, self.output_tokens = input_tokens, output_tokens

    def render(self, request: dict) -> Reply:
        body = {
            "id": f"msg_{time.monotonic_ns()}", "type": "message", "role": "assistant",
            "model": request.get("model", MODEL), "content": self.content,
            "stop_reason": self.stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }
        return Reply(body=body, delay=self.delay)


def tool_use(*calls: tuple[str, dict], input_tokens: int = INPUT_TOKENS,
             output_tokens: int = OUTPUT_TOKENS) -> Rendered:
    """One assistant turn calling tools."""
    blocks = [{"type": "tool_use", "id": f"toolu_{i}_{time.monotonic_ns()}", "name": name, "input": args}
              for i, (name, args) in enumerate(calls)]
    return _Message(blocks, "tool_use", input_tokens, output_tokens)


def final(args: dict, **usage: int) -> Rendered:
    """The structured answer, through pydantic-ai's output tool."""
    return tool_use(("final_result", args), **usage)


def text(content: str, stop_reason: str = "end_turn") -> Rendered:
    return _Message([{"type": "text", "text": content}], stop_reason)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                529: "overloaded_error"}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
    return Reply(body=body, status=status, headers=headers or {})


def system_text(request: dict) -> str:
    system = request.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def role_of(request: dict) -> str:
    return role_in(system_text(request)) or "unknown"


def tool_results(request: dict) -> list[str]:
    """The contents of the tool_result blocks in a request, oldest first."""
    out = []
    for m in request.get("messages", []):
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                out.append(c if isinstance(c, str) else json.dumps(c))
    return out


class Script(server.Script):
    """Scripted replies per role (read from the top-level `system`), served in order."""

    role_of = staticmethod(role_of)
    error = staticmethod(error)


def sse_events(message: dict) -> list[tuple[str, dict]]:
    """A message as the Messages API streams it: message_start, a start/delta/stop per block, message_delta/stop."""
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {**block, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class FakeAnthropic(server.ScriptedServer):
    """`with FakeAnthropic(script) as server:` then point a client at `server.url` (no `/v1`: the SDK adds it)."""

    role_of = staticmethod(role_of)
    error = staticmethod(error)

    def get(self, path: str) -> Reply:
        if path.split("?")[0].rstrip("/").endswith("/v1/models"):
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                    for m in self.models]
            return Reply(body={"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                               "last_id": data[-1]["id"] if data else None})
        return error(404, f"no route {path}")

    def post(self, path: str, request: dict) -> Reply:
        if path.split("?")[0].rstrip("/") != "/v1/messages":
            return error(404, f"no route {path}")
        return self.handler(request)

    def encode(self, reply: Reply, request: dict | None) -> tuple[bytes, str]:
        body = reply.body
        streamed = bool((request or {}).get("stream")) and reply.status == 200
        if streamed and isinstance(body, dict) and body.get("type") == "message":
            events = "".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n" for name, ev in sse_events(body))
            return events.encode(), "text/event-stream"
        return super().encode(reply, request)

    def response_headers(self) -> dict[str, str]:
        return {"request-id": f"req_{time.monotonic_ns()}"}

    @property
    def paths(self) -> list[str]:
        return [r.path for r in self.received]

    @property
    def headers(self) -> list[dict[str, str]]:
        return [r.headers for r in self.received]
