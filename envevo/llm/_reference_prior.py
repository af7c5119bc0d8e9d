"""The llm estimator: p_T from a reference language model behind an OpenAI-compatible endpoint.

Two methods, recorded in the estimator's name (`llm-logprobs-v1:<model>` or `llm-judgement-v1:<model>`):

- **logprobs** (preferred; vLLM, SGLang and other servers of base models support it): the label is scored as
  text. One request to `POST /v1/completions` with `echo: true, logprobs: 1, max_tokens: 0` returns the
  log-probability of every prompt token; the label's tokens (found by `text_offset`) are summed:

      −log p_T(σ | g)    = −Σ log p(tokens of " σ" | "Goal: g\\nThe agent works in the scenario:")
      −log p_T(κ | σ, g) = −Σ log p(tokens of " κ" | "Goal: g\\nThe agent works in the scenario: σ\\n
                                                      There it applies the skill:")

  This is the probability of that exact wording, so a longer label costs more than a short one naming the
  same thing; compare figures within one labelling style (one engine) rather than across styles.
- **judgement** (the fallback for chat-only endpoints, e.g. hosted chat models): the model is asked via
  `POST /v1/chat/completions` for a probability in (0, 1] as JSON, `{"p": 0.3}`, at temperature 0; the cost is
  −log p, with p floored at 1e-6. Coarser and less calibrated than logprobs. The answer is bounded: a few tokens
  (`max_tokens`), constrained by a JSON-schema `response_format` where the server takes one (llama.cpp, vLLM,
  SGLang, OpenAI); a server that refuses it is asked again without, and no more for this estimator.

`method="auto"` probes the endpoint once with an echo request and uses logprobs when it works, judgement when the
server rejects it or returns no prompt logprobs; the outcome is remembered in the cache file.

Transient failures (429, 5xx, timeouts) are retried under envevo.llm's one retry policy (envevo/llm/_retry.py).
Every answer is metered (`LLMPrior.meter`, role `estimator`) like the LLM roles' calls: the server's `usage`, or an
estimate from the request and the answer, flagged, when it sends none.
Labels are normalized as for the corpus estimator (identifiers like `passwd_file` read as words). Every score is
cached in a JSON file (default ~/.cache/envevo/llm-prior/<digest of endpoint and model>.json) under
(method, kind, label, scenario, goal), so a rerun asks nothing and reproduces the same figures. Model, base URL
and API key resolve as for the LLM engine (envevo.llm): `--model`, `--base-url`, else the `[llm]` table of
envevo.toml; the key comes from OPENAI_API_KEY (or `api_key_env`); a base URL without a key needs none.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import time
from pathlib import Path

from envevo.errors import UserError
from envevo.llm._config import load_settings, parse_model
from envevo.llm._errors import EndpointUnavailable
from envevo.llm._meter import Meter, estimate_tokens
from envevo.llm._retry import DEFAULT_BUDGET_SEC, RetryPolicy, parse_retry_after, retryable_status
from envevo.trace import cache_dir, label_text

PROMPT_VERSION = "v1"
P_FLOOR = 1e-6
METHODS = ("auto", "logprobs", "judgement")

_SCENARIO_PREFIX = "Goal: {goal}\nThe agent works in the scenario:"
_SKILL_PREFIX = "Goal: {goal}\nThe agent works in the scenario: {scenario}\nThere it applies the skill:"

_JUDGE_SYSTEM = ("You estimate how typical the parts of command-line tasks are. Answer with JSON only, "
                 'of the form {"p": <number>}, no other text.')
_JUDGE_SCENARIO = ("A terminal task has this goal: {goal}\n\nOf all the places (files, services, data, tools' state) "
                   "an agent could work in while solving a task with this goal, what is the probability that it works "
                   "in this scenario: \"{label}\"?\nAnswer with a probability p in (0, 1] as JSON: {{\"p\": <number>}}")
_JUDGE_SKILL = ("A terminal task has this goal: {goal}\nThe agent is working in this scenario: \"{scenario}\".\n\n"
                "Of all the skills (commands, techniques, kinds of code) an agent could apply there, what is the "
                "probability that it applies this skill: \"{label}\"?\nAnswer with a probability p in (0, 1] as JSON: "
                "{{\"p\": <number>}}")


#: `{"p": 0.125}` is about 8 tokens: room for spacing, never a runaway answer.
JUDGE_MAX_TOKENS = 32
_JUDGE_FORMAT = {"type": "json_schema", "json_schema": {"name": "probability", "strict": True, "schema": {
    "type": "object", "properties": {"p": {"type": "number"}}, "required": ["p"], "additionalProperties": False}}}


class LLMPrior:
    """ReferenceDistribution from a reference model's probabilities (natural log); see the module docstring."""

    def __init__(self, *, model: str, base_url: str, api_key: str | None = None, method: str = "auto",
                 cache: Path | None = None, timeout: float = 60.0, max_retries: int | None = None,
                 retry_budget_sec: float = DEFAULT_BUDGET_SEC):
        import httpx

        if method not in METHODS:
            raise UserError(f"unknown llm estimator method {method!r}; choose one of: {', '.join(METHODS)}")
        self.model, self.base_url = model, base_url.rstrip("/")
        self.max_retries = max_retries
        self.policy = RetryPolicy(budget_sec=retry_budget_sec, max_retries=max_retries, max_backoff_sec=30.0)
        self._rng = random.Random()
        key = hashlib.sha256(f"{self.base_url}|{model}".encode()).hexdigest()[:16]
        self.cache_path = Path(cache) if cache else cache_dir() / "llm-prior" / f"{key}.json"
        self._cache = self._load_cache()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout,
                                    transport=httpx.HTTPTransport(retries=1))
        self._max_tokens = 0  # 1 for servers that refuse max_tokens=0 with echo
        self._json_schema = True  # False once the server refused the judgement's response_format
        self.requests = 0
        self.meter = Meter()  # tokens of every answer, shown with the command's (or stored with the run's) usage
        auto = method == "auto"
        if auto:
            method = self._cache.get("method") or self._probe()
            if self._cache.get("method") != method:  # remember the probe's outcome for the next run
                self._cache["method"] = method
                self._save_cache()
        self.method = method
        self.name = f"llm-{method}-{PROMPT_VERSION}:{model}"
        self.notes = [f"llm: {self.base_url} returns no prompt logprobs for {model}; scoring by probability "
                      "judgements via chat (coarser)"] if auto and method == "judgement" else []

    @classmethod
    def from_settings(cls, *, model: str | None = None, base_url: str | None = None, api_key_env: str | None = None,
                      method: str = "auto", cache: Path | None = None) -> LLMPrior:
        """Model, URL and key as the LLM engine resolves them: arguments first, then envevo.toml's [llm]."""
        settings = load_settings()
        model = model or settings.model
        if not model:
            raise UserError("--estimator llm needs a reference model: --reference-model NAME --base-url URL "
                            "(e.g. --reference-model Qwen/Qwen3-8B --base-url http://localhost:8000/v1), or model "
                            "under [llm] in envevo.toml")
        spec = parse_model(model, base_url=base_url or settings.base_url, api_key_env=api_key_env or settings.api_key_env)
        if spec.provider != "openai":
            raise UserError(f"the llm estimator speaks the OpenAI API (completions with logprobs, or chat); "
                            f"{spec.label} is not an OpenAI-compatible model")
        key = spec.api_key()
        if key is None:
            raise UserError(f"no API key for {spec.label}: set {spec.key_env}, or give --base-url of a local server")
        return cls(model=spec.name, base_url=spec.base_url or "https://api.openai.com/v1", api_key=key,
                   method=method, cache=cache)

    # ------------------------------------------------------------------------------------------- HTTP

    def _post(self, path: str, body: dict) -> tuple[int, dict]:
        """POST with retries on 429/5xx/timeouts (the shared RetryPolicy); (status, JSON body).
        Unreachable → one-line error."""
        import httpx

        attempts = self.policy.start(rng=self._rng)
        while True:
            try:
                self.requests += 1
                r = self._client.post(path, json=body)
            except httpx.TimeoutException as e:
                wait = attempts.next_wait()
                if wait is not None:
                    time.sleep(wait)
                    continue
                raise EndpointUnavailable(f"the llm estimator's endpoint {self.base_url} kept timing out "
                                          f"{attempts.why_not}: {e}") from e
            except httpx.HTTPError as e:
                raise EndpointUnavailable(f"cannot reach the llm estimator's endpoint {self.base_url}: {e}; "
                                          "is the server running and --base-url right?") from e
            if retryable_status(r.status_code):
                wait = attempts.next_wait(parse_retry_after(r.headers.get("retry-after")))
                if wait is not None:
                    time.sleep(wait)
                    continue  # else the caller reports the status it kept getting
            if r.status_code in (401, 403):
                raise EndpointUnavailable(f"{self.base_url} rejected the API key ({r.status_code}): {_message(r)}")
            try:
                data = r.json()
            except ValueError:
                data = {"error": {"message": r.text[:200]}}
            data = data if isinstance(data, dict) else {"data": data}
            if r.status_code == 200:
                self._meter(body, data)
            return r.status_code, data

    def _meter(self, body: dict, data: dict) -> None:
        """One answer's tokens, as the server counted them, else estimated from what was sent and what came back."""
        usage = data.get("usage")
        if isinstance(usage, dict) and usage.get("prompt_tokens"):
            tokens, estimated = (int(usage["prompt_tokens"]), int(usage.get("completion_tokens") or 0)), False
        elif "prompt" in body:  # an echo scoring the prompt: it generates at most max_tokens (0 or 1)
            tokens, estimated = (estimate_tokens(body["prompt"]), int(body.get("max_tokens") or 0)), True
        else:
            sent = json.dumps(body.get("messages") or [], ensure_ascii=False)
            try:
                answer = data["choices"][0]["message"].get("content") or ""
            except (KeyError, IndexError, TypeError, AttributeError):
                answer = ""
            tokens, estimated = (estimate_tokens(sent), estimate_tokens(str(answer))), True
        within = Meter.current()  # a caller's lineage, if any, pays for it
        with self.meter.scope("estimator", within.lineage, within.generation):
            self.meter.record(f"openai:{self.model}", *tokens, None, estimated=estimated)

    # ------------------------------------------------------------------------------------------- methods

    def _probe(self) -> str:
        """logprobs when the endpoint echoes prompt logprobs, else judgement."""
        try:
            self._logprob("Goal: list files\nThe agent works in the scenario:", "a directory")
        except _NoLogprobs:
            return "judgement"
        return "logprobs"

    def _logprob(self, prefix: str, label: str) -> tuple[float, int]:
        """(Σ log p of the label's tokens after prefix, number of tokens)."""
        prompt = f"{prefix} {label}"
        body = {"model": self.model, "prompt": prompt, "echo": True, "logprobs": 1, "temperature": 0,
                "max_tokens": self._max_tokens}
        status, data = self._post("/completions", body)
        if status == 400 and self._max_tokens == 0 and "max_tokens" in _err(data):
            self._max_tokens = 1
            body["max_tokens"] = 1
            status, data = self._post("/completions", body)
        if retryable_status(status):  # a failing server, not a missing feature: never switch method on it
            raise EndpointUnavailable(f"{self.base_url} kept failing ({status}) after retries: {_err(data)}")
        if status != 200:
            raise _NoLogprobs(f"{status}: {_err(data)}")
        try:
            lp = data["choices"][0]["logprobs"]
            tokens, logprobs, offsets = lp["tokens"], lp["token_logprobs"], lp["text_offset"]
        except (KeyError, IndexError, TypeError) as e:
            raise _NoLogprobs(f"no prompt logprobs in the answer ({e})") from e
        if not offsets or len(offsets) != len(tokens) or len(logprobs) != len(tokens):
            raise _NoLogprobs("prompt logprobs without matching text offsets")
        start, stop = len(prefix), len(prompt)
        total, n = 0.0, 0
        for i, (tok, off) in enumerate(zip(tokens, offsets, strict=True)):
            end = offsets[i + 1] if i + 1 < len(offsets) else off + len(tok)
            if end <= start or off >= stop:  # the prefix, or a generated token past the prompt
                continue
            if logprobs[i] is None:
                raise _NoLogprobs("a label token has no logprob")
            total += float(logprobs[i])
            n += 1
        if n == 0:
            raise _NoLogprobs("no token of the label in the echoed prompt")
        return total, n

    def _judgement(self, prompt: str) -> float:
        body: dict = {"model": self.model, "temperature": 0, "max_tokens": JUDGE_MAX_TOKENS,
                      "messages": [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": prompt}]}
        last = ""
        for _ in range(2):  # one re-ask after an unparseable answer
            if self._json_schema:
                body["response_format"] = _JUDGE_FORMAT
            status, data = self._post("/chat/completions", body)
            if status == 400 and body.pop("response_format", None) is not None:  # no JSON-schema output here
                self._json_schema = False
                status, data = self._post("/chat/completions", body)
            if status != 200:
                raise UserError(f"{self.base_url} refused the judgement request for {self.model} ({status}): {_err(data)}")
            try:
                last = data["choices"][0]["message"].get("content") or ""
            except (KeyError, IndexError, TypeError, AttributeError):
                last = ""
            p = _parse_probability(last)
            if p is not None:
                return max(P_FLOOR, min(1.0, p))
        raise UserError(f"{self.model} gave no probability in (0, 1] (last answer: {last[:120]!r}); "
                        "use a model that follows the JSON instruction, or an endpoint with logprobs")

    # ------------------------------------------------------------------------------------------- cache

    def _load_cache(self) -> dict:
        try:
            data = json.loads(self.cache_path.read_text(encoding="utf-8"))
            if data.get("prompt_version") == PROMPT_VERSION and data.get("model") == self.model:
                data.setdefault("scores", {})
                return data
        except (OSError, ValueError, AttributeError):
            pass
        return {"model": self.model, "base_url": self.base_url, "prompt_version": PROMPT_VERSION, "method": None,
                "scores": {}}

    def _save_cache(self) -> None:
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self._cache, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.cache_path)
        except OSError:  # a read-only cache dir only costs requests
            pass

    def _score(self, kind: str, label: str, scenario: str | None, goal: str) -> float:
        label = label_text(label)
        scenario = label_text(scenario) if scenario is not None else None
        key = json.dumps([self.method, kind, label, scenario, goal], ensure_ascii=False)
        hit = self._cache["scores"].get(key)
        if hit is not None:
            return float(hit["neg_log_p"])
        if self.method == "logprobs":
            prefix = (_SCENARIO_PREFIX.format(goal=goal) if kind == "scenario"
                      else _SKILL_PREFIX.format(goal=goal, scenario=scenario))
            try:
                total, n = self._logprob(prefix, label)
            except _NoLogprobs as e:
                raise UserError(f"{self.base_url} gave no prompt logprobs for {self.model} ({e}); "
                                "use --llm-method judgement for chat-only endpoints") from None
            entry = {"neg_log_p": max(0.0, -total), "tokens": n}
        else:
            prompt = (_JUDGE_SCENARIO.format(goal=goal, label=label) if kind == "scenario"
                      else _JUDGE_SKILL.format(goal=goal, scenario=scenario, label=label))
            entry = {"neg_log_p": -math.log(self._judgement(prompt))}
        self._cache["scores"][key] = entry
        self._save_cache()
        return float(entry["neg_log_p"])

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float:
        return self._score("scenario", scenario, None, goal)

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float:
        return self._score("skill", skill, scenario, goal)

    def close(self) -> None:
        self._client.close()


class _NoLogprobs(Exception):
    """The endpoint does not score prompts (no echo, no logprobs, or not a completions model)."""


def _err(data: dict) -> str:
    e = data.get("error") if isinstance(data, dict) else None
    if isinstance(e, dict):
        return str(e.get("message") or e)
    return str(e or data.get("detail") or data.get("message") or data)[:300]


def _message(r) -> str:
    try:
        return _err(r.json())
    except ValueError:
        return r.text[:200]


_P_FIELD = re.compile(r'"p"\s*:\s*"?([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)')
_NUMBER = re.compile(r"(?<![\w.])([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)")


def _parse_probability(text: str) -> float | None:
    """p from `{"p": 0.3}` (or, failing that, the last bare number), if it lies in (0, 1]."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    m = _P_FIELD.search(text)
    candidates = [m.group(1)] if m else _NUMBER.findall(text)[-1:]
    for c in candidates:
        try:
            p = float(c)
        except ValueError:
            continue
        if 0 < p <= 1:
            return p
    return None
