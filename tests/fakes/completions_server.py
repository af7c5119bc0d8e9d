"""A local fake OpenAI-compatible server for the llm p_T estimator: `/v1/completions` with echoed prompt
logprobs, and `/v1/chat/completions` answering probability judgements.

The "language model" is a toy with known numbers: the prompt is cut into whitespace-led tokens (" csv", " file");
the first token has no logprob (as on real servers), a token in `common` has logprob −0.5 and any other −5.0.
So the label " csv file" after any prefix scores exactly −1.0 and " kerberos keytab" −10.0.

`echo=False` makes /completions answer 400 like a chat-only endpoint; `zero_max_tokens=False` rejects
`max_tokens: 0` like servers that need at least one generated token; `judgement` is the reply of the chat route;
`fail_status` (e.g. 503) makes every route fail with that status and `retry-after: 0` (`FakeServer.fail`);
`usage=True` counts tokens in each answer's `usage`, as real servers do (the toy's tokens; 3 per judgement).
"""

from __future__ import annotations

import re

from tests.fakes.server import FakeServer, Reply

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


class FakeCompletions(FakeServer):
    """`with FakeCompletions() as server:` then point the estimator at `server.url`."""

    url_path = "/v1"

    def __init__(self, *, echo: bool = True, zero_max_tokens: bool = True, judgement: str = '{"p": 0.25}',
                 common: set[str] | None = None, fail_status: int | None = None, usage: bool = False):
        super().__init__()
        self.echo, self.zero_max_tokens, self.judgement, self.usage = echo, zero_max_tokens, judgement, usage
        self.common = COMMON if common is None else common
        if fail_status:
            self.fail(fail_status, retry_after=0, message="overloaded")

    def post(self, path: str, request: dict) -> Reply:
        route = path.rstrip("/")
        if route.endswith("/chat/completions"):
            msg = {"role": "assistant", "content": self.judgement}
            counted = {"prompt_tokens": sum(len(_TOKEN.findall(m["content"])) for m in request["messages"]),
                       "completion_tokens": 3}
            return Reply(body={"id": "chat-1", "object": "chat.completion", "model": request.get("model"),
                               "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                               **({"usage": counted} if self.usage else {})})
        if not route.endswith("/completions"):
            return self.error(404, f"no route {path}")
        if not self.echo:
            return self.error(400, "echo is not supported by this model")
        if request.get("max_tokens") == 0 and not self.zero_max_tokens:
            return self.error(400, "max_tokens must be at least 1")
        prompt = request["prompt"]
        lp = toy_logprobs(prompt, self.common)
        text = prompt
        if request.get("max_tokens"):  # one generated token, past the prompt
            lp["tokens"].append(" ok")
            lp["token_logprobs"].append(-0.1)
            lp["text_offset"].append(len(prompt))
            lp["top_logprobs"].append({" ok": -0.1})
            text += " ok"
        counted = {"prompt_tokens": len(_TOKEN.findall(prompt)), "completion_tokens": int(request.get("max_tokens") or 0)}
        return Reply(body={"id": "cmpl-1", "object": "text_completion", "model": request.get("model"),
                           "choices": [{"index": 0, "text": text, "logprobs": lp, "finish_reason": "length"}],
                           **({"usage": counted} if self.usage else {})})

    @property
    def requests(self) -> list[tuple[str, dict]]:  # type: ignore[override]
        """(path, request) per POST, the path without a trailing slash."""
        return [(r.path.rstrip("/"), r.body) for r in self.received]

    def paths(self) -> list[str]:
        return [p.rsplit("/v1", 1)[-1] for p, _ in self.requests]
