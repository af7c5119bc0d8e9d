"""The base of the local fake HTTP servers the tests point clients at (OpenAI, Anthropic, completions, terminus-2).

A `FakeServer` listens on a free 127.0.0.1 port in a daemon thread while used as a context manager, records every
POST (path, lower-cased headers, JSON body) and answers with a `Reply`. A subclass says only what its API does:
`post(path, request)` and `get(path)` return the reply, `error(status, message)` is its error body, and `encode`
may change how a reply goes on the wire (Anthropic streams server-sent events). A `ScriptedServer` is a model API
answering through a handler, usually a `Script`.

Scripted replies are shared too: a `Script` serves each envevo role's replies in order, read from the role line
every envevo prompt starts with (`envevo-role: <name>`); a reply can be fixed, a function of the request, or a
`Rendered` one completed from the request it answers (ids, model, usage). Faults are replies: an HTTP error with
headers (429 + retry-after), a delay longer than the client's timeout, a body that is not JSON; `fail` makes the
server answer the next requests (or all of them) with an error before any route is asked, and `fail_for` answers
every model request (POST) with an error for a stretch of wall time (an overload burst), then serves again.
"""

from __future__ import annotations

import json
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

MODEL = "fake-model"


@dataclass
class Reply:
    body: Any = None  # dict → JSON; str/bytes → sent as is
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class Rendered(Reply, ABC):
    """A reply whose final body depends on the request it answers; `Script` renders it before sending."""

    @abstractmethod
    def render(self, request: dict) -> Reply: ...


Handler = Callable[[dict], Reply]
Step = Reply | Callable[[dict], Reply]


def delayed(reply: Reply, seconds: float) -> Reply:
    reply.delay = seconds
    return reply


_ROLE = re.compile(r"envevo-role: ([a-z\-]+)")


def role_in(text: str) -> str | None:
    found = _ROLE.search(text)
    return found.group(1) if found else None


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict


class FakeServer:
    """`with Subclass(...) as server:` then point a client at `server.url`."""

    url_path = ""  # what the client's base URL adds after host:port, e.g. "/v1"

    def __init__(self) -> None:
        self.received: list[Recorded] = []
        self._faults: list[Reply] = []
        self._fault_forever: Reply | None = None
        self._burst: tuple[Reply, float] | None = None
        self._burst_from: float | None = None
        self.burst_errors = 0  # requests answered by the burst
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # What a subclass says about its API.
    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        return Reply(body={"error": {"message": message}}, status=status, headers=headers or {})

    def get(self, path: str) -> Reply:
        return self.error(404, f"no route {path}")

    def post(self, path: str, request: dict) -> Reply:
        return self.error(404, f"no route {path}")

    def encode(self, reply: Reply, request: dict | None) -> tuple[bytes, str]:
        body = reply.body
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        return data, "application/json"

    def response_headers(self) -> dict[str, str]:
        return {}

    # Error injection and what was received.
    def fail(self, status: int, *, times: int | None = None, retry_after: float | None = None,
             message: str = "fake server: injected failure") -> None:
        """Answer the next `times` requests (None: every request from now on) with this error, before any route."""
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        reply = self.error(status, message, headers)
        with self._lock:
            if times is None:
                self._fault_forever = reply
            else:
                self._faults.extend([reply] * times)

    def fail_for(self, status: int, seconds: float, *, retry_after: float | None = None,
                 message: str = "fake server: overloaded") -> None:
        """Answer every POST with this error for `seconds` of wall time from the first POST that arrives."""
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        with self._lock:
            self._burst, self._burst_from = (self.error(status, message, headers), seconds), None

    def _bursting(self) -> Reply | None:
        with self._lock:
            if self._burst is None:
                return None
            reply, seconds = self._burst
            now = time.monotonic()
            self._burst_from = self._burst_from if self._burst_from is not None else now
            if now - self._burst_from >= seconds:
                return None
            self.burst_errors += 1
            return reply

    def _injected(self) -> Reply | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else self._fault_forever

    @property
    def requests(self) -> list[dict]:
        return [r.body for r in self.received]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.url_path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_for(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like real servers

        def log_message(self, *args):  # keep test output clean
            pass

        def _send(self, reply: Reply, request: dict | None = None) -> None:
            if reply.delay:
                time.sleep(reply.delay)
            data, content_type = fake.encode(reply, request)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in {**fake.response_headers(), **reply.headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def do_GET(self):  # noqa: N802
            self._send(fake._injected() or fake.get(self.path))

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            fake.received.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, request))
            self._send(fake._injected() or fake._bursting() or fake.post(self.path, request), request)

    return _H


class ScriptedServer(FakeServer):
    """A model API whose answers come from `handler` (usually a `Script`) and that lists `models`.

    A subclass gives its API's `role_of(request)` as a static method.
    """

    role_of: Callable[[dict], str]

    def __init__(self, handler: Handler, models: tuple[str, ...] = (MODEL,)):
        super().__init__()
        self.handler, self.models = handler, models

    def roles(self) -> list[str]:
        """The envevo role of every request received, in order."""
        return [self.role_of(r) for r in self.requests]


class Script:
    """Scripted replies per role, served in order. A role that runs out answers 400 with a clear message: not a
    transient error, so a test whose script is short fails at once instead of retrying for the 15-minute budget.

    A subclass gives its API's `role_of(request)` and `error(status, message)`, as static methods.
    """

    role_of: Callable[[dict], str]
    error: Callable[[int, str], Reply]

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
        role = self.role_of(request)
        with self._lock:
            queue = self.queues.get(role) or []
            if not queue:
                return self.error(400, f"fake server: the script has no reply left for role {role!r}")
            step = queue.pop(0)
            self.served.append((role, len(queue)))
        reply = step(request) if callable(step) and not isinstance(step, Reply) else step
        return reply.render(request) if isinstance(reply, Rendered) else reply
