"""A local fake Anthropic Messages API for tests: scripted replies per envevo role, like `openai_server`.

Serves `POST /v1/messages` (pydantic-ai calls the SDK's beta client, so the path carries `?beta=true`) and
`GET /v1/models`. Every envevo role prompt starts with `envevo-role: <name>`; `Script` reads it from the
request's top-level `system` (a string or a list of text blocks) and serves that role's next scripted reply.
Answers are Anthropic message objects: `content` blocks (`text`, `tool_use`), `stop_reason` and `usage`
{input_tokens, output_tokens}. A request with `"stream": true` (pydantic-ai streams behind the scenes when a
model's default `max_tokens` is large and the client has a custom timeout, as envevo's does) gets the same
message as server-sent events. Faults are replies too: an HTTP error with headers (429 + retry-after), a delay.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model"


@dataclass
class Reply:
    body: Any = None  # dict → JSON; str/bytes → sent as is
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Handler = Callable[[dict], Reply]
Step = Reply | Callable[[dict], Reply]

# Fixed so tests can assert exact metering: every scripted message reports these counts.
INPUT_TOKENS = 1234
OUTPUT_TOKENS = 56


class _Message(Reply):
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


def tool_use(*calls: tuple[str, dict], input_tokens: int = INPUT_TOKENS, output_tokens: int = OUTPUT_TOKENS) -> Reply:
    """One assistant turn calling tools."""
    blocks = [{"type": "tool_use", "id": f"toolu_{i}_{time.monotonic_ns()}", "name": name, "input": args}
              for i, (name, args) in enumerate(calls)]
    return _Message(blocks, "tool_use", input_tokens, output_tokens)


def final(args: dict, **usage: int) -> Reply:
    """The structured answer, through pydantic-ai's output tool."""
    return tool_use(("final_result", args), **usage)


def text(content: str, stop_reason: str = "end_turn") -> Reply:
    return _Message([{"type": "text", "text": content}], stop_reason)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                529: "overloaded_error"}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
    return Reply(body=body, status=status, headers=headers or {})


def delayed(reply: Reply, seconds: float) -> Reply:
    reply.delay = seconds
    return reply


_ROLE = re.compile(r"envevo-role: ([a-z\-]+)")


def system_text(request: dict) -> str:
    system = request.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def role_of(request: dict) -> str:
    found = _ROLE.search(system_text(request))
    return found.group(1) if found else "unknown"


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


class Script:
    """Scripted replies per role, served in order. A role that runs out answers 500 with a clear message."""

    def __init__(self, **roles: list[Step]):
        self.queues: dict[str, list[Step]] = {k.replace("_", "-"): list(v) for k, v in roles.items()}
        self.served: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def add(self, role: str, *steps: Step) -> None:
        with self._lock:
            self.queues.setdefault(role, []).extend(steps)

    def remaining(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.queues.items() if v}

    def __call__(self, request: dict) -> Reply:
        role = role_of(request)
        with self._lock:
            queue = self.queues.get(role) or []
            if not queue:
                return error(500, f"fake server: the script has no reply left for role {role!r}")
            step = queue.pop(0)
            self.served.append((role, len(queue)))
        reply = step(request) if callable(step) and not isinstance(step, Reply) else step
        return reply.render(request) if isinstance(reply, _Message) else reply


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


class FakeAnthropic:
    """`with FakeAnthropic(script) as server:` then point a client at `server.url` (no `/v1`: the SDK adds it)."""

    def __init__(self, handler: Handler, models: tuple[str, ...] = (MODEL,)):
        self.handler = handler
        self.models = models
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, reply: Reply, stream: bool = False) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body
                sse = stream and reply.status == 200 and isinstance(body, dict) and body.get("type") == "message"
                if sse:
                    data = "".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n" for name, ev in sse_events(body)).encode()
                else:
                    data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("request-id", f"req_{time.monotonic_ns()}")
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):  # noqa: N802
                if self.path.split("?")[0].rstrip("/").endswith("/v1/models"):
                    data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                            for m in fake.models]
                    self._send(Reply(body={"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                           "last_id": data[-1]["id"] if data else None}))
                else:
                    self._send(error(404, f"no route {self.path}"))

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(request)
                fake.paths.append(self.path)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path.split("?")[0].rstrip("/") != "/v1/messages":
                    self._send(error(404, f"no route {self.path}"))
                    return
                self._send(fake.handler(request), stream=bool(request.get("stream")))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def roles(self) -> list[str]:
        return [role_of(r) for r in self.requests]
