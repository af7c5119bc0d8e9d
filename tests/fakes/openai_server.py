"""A local fake OpenAI-compatible server for tests: scripted chat-completion replies, per envevo role.

Every envevo role prompt starts with `envevo-role: <name>`; `Script` reads it from the request's system message
and serves that role's next scripted reply. A reply can be a fixed `Reply` or a function of the request JSON
(e.g. a Modifier turn that depends on a tool result). Faults are replies too: an HTTP error with headers
(429 + retry-after), a delay longer than the client's timeout, malformed tool-call JSON, a plain-text refusal.
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


def _usage(request: dict, message: dict) -> dict:
    prompt = len(json.dumps(request.get("messages", []))) // 4
    completion = max(1, len(json.dumps(message)) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class _Completion(Reply):
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


def tool_calls(*calls: tuple[str, dict | str]) -> Reply:
    """One assistant turn calling tools; an argument given as str is sent verbatim (e.g. malformed JSON)."""
    items = [{"id": f"call_{i}_{time.monotonic_ns()}", "type": "function",
              "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
             for i, (name, args) in enumerate(calls)]
    return _Completion({"role": "assistant", "content": None, "tool_calls": items}, "tool_calls")


def final(args: dict | str) -> Reply:
    """The structured answer, through pydantic-ai's output tool."""
    return tool_calls(("final_result", args))


def text(content: str, finish_reason: str = "stop") -> Reply:
    return _Completion({"role": "assistant", "content": content}, finish_reason)


def refusal_field(message: str) -> Reply:
    """A refusal the way OpenAI's structured outputs send it: no content, a `refusal` string."""
    return _Completion({"role": "assistant", "content": None, "refusal": message}, "stop")


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(body={"error": {"message": message, "type": "error", "code": str(status)}}, status=status,
                 headers=headers or {})


def delayed(reply: Reply, seconds: float) -> Reply:
    reply.delay = seconds
    return reply


_ROLE = re.compile(r"envevo-role: ([a-z\-]+)")


def role_of(request: dict) -> str:
    for m in request.get("messages", []):
        if m.get("role") in ("system", "developer"):
            content = m.get("content")
            text_ = content if isinstance(content, str) else json.dumps(content)
            found = _ROLE.search(text_)
            if found:
                return found.group(1)
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
        return reply.render(request) if isinstance(reply, _Completion) else reply


class FakeOpenAI:
    """`with FakeOpenAI(script) as server:` then point a client at `server.url`."""

    def __init__(self, handler: Handler, models: tuple[str, ...] = (MODEL,)):
        self.handler = handler
        self.models = models
        self.requests: list[dict] = []
        fake = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like real servers
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body
                data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def do_GET(self):  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(Reply(body={"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]}))
                else:
                    self._send(error(404, f"no route {self.path}"))

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(request)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(error(404, f"no route {self.path}"))
                    return
                self._send(fake.handler(request))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def roles(self) -> list[str]:
        return [role_of(r) for r in self.requests]
