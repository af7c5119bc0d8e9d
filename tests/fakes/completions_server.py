"""A local fake OpenAI-compatible server for the llm p_T estimator: `/v1/completions` with echoed prompt
logprobs, and `/v1/chat/completions` answering probability judgements.

The "language model" is a toy with known numbers: the prompt is cut into whitespace-led tokens (" csv", " file");
the first token has no logprob (as on real servers), a token in `common` has logprob −0.5 and any other −5.0.
So the label " csv file" after any prefix scores exactly −1.0 and " kerberos keytab" −10.0.

`echo=False` makes /completions answer 400 like a chat-only endpoint; `zero_max_tokens=False` rejects
`max_tokens: 0` like servers that need at least one generated token; `judgement` is the reply of the chat route;
`fail_status` (e.g. 503) makes every route fail with that status and `retry-after: 0`.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMON = {"goal:", "the", "agent", "works", "in", "scenario:", "there", "it", "applies", "skill:", "csv", "file",
          "a", "directory", "grep", "sort", "list", "files", "count", "lines", "log"}
_TOKEN = re.compile(r"\s*\S+")


def toy_logprobs(prompt: str, common: set[str]) -> dict:
    tokens = _TOKEN.findall(prompt)
    offsets, pos = [], 0
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    logprobs = [None] + [-0.5 if t.strip().lower() in common else -5.0 for t in tokens[1:]]
    return {"tokens": tokens, "token_logprobs": logprobs, "text_offset": offsets,
            "top_logprobs": [None] + [{t: lp} for t, lp in zip(tokens[1:], logprobs[1:], strict=True)]}


class FakeCompletions:
    """`with FakeCompletions() as server:` then point the estimator at `server.url`."""

    def __init__(self, *, echo: bool = True, zero_max_tokens: bool = True, judgement: str = '{"p": 0.25}',
                 common: set[str] | None = None, fail_status: int | None = None):
        self.echo, self.zero_max_tokens, self.judgement = echo, zero_max_tokens, judgement
        self.fail_status = fail_status
        self.common = COMMON if common is None else common
        self.requests: list[tuple[str, dict]] = []
        fake = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.rstrip("/")
                fake.requests.append((path, req))
                if fake.fail_status:
                    self._send(fake.fail_status, {"error": {"message": "overloaded"}}, {"retry-after": "0"})
                elif path.endswith("/chat/completions"):
                    msg = {"role": "assistant", "content": fake.judgement}
                    self._send(200, {"id": "chat-1", "object": "chat.completion", "model": req.get("model"),
                                     "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]})
                elif path.endswith("/completions"):
                    if not fake.echo:
                        self._send(400, {"error": {"message": "echo is not supported by this model"}})
                    elif req.get("max_tokens") == 0 and not fake.zero_max_tokens:
                        self._send(400, {"error": {"message": "max_tokens must be at least 1"}})
                    else:
                        prompt = req["prompt"]
                        lp = toy_logprobs(prompt, fake.common)
                        text = prompt
                        if req.get("max_tokens"):  # one generated token, past the prompt
                            lp["tokens"].append(" ok")
                            lp["token_logprobs"].append(-0.1)
                            lp["text_offset"].append(len(prompt))
                            lp["top_logprobs"].append({" ok": -0.1})
                            text += " ok"
                        self._send(200, {"id": "cmpl-1", "object": "text_completion", "model": req.get("model"),
                                         "choices": [{"index": 0, "text": text, "logprobs": lp,
                                                      "finish_reason": "length"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def paths(self) -> list[str]:
        return [p.rsplit("/v1", 1)[-1] for p, _ in self.requests]

    def __enter__(self) -> FakeCompletions:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
