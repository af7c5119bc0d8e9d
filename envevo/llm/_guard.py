"""A model wrapper that makes every request safe to run unattended for hours.

- Bounded concurrency per endpoint: one semaphore per server, shared by every role that talks to it.
- Retries with exponential backoff and jitter on 429, 5xx, timeouts and dropped connections, waiting at least
  as long as the server's `retry-after` asks, for as long as the call's time budget lasts (envevo/llm/_retry.py,
  shared with the llm p_T estimator). The provider SDKs' own retries are switched off (max_retries=0 on the
  client) so this is the only retry policy, the same for every provider. A call still failing at the end of its
  budget raises `EndpointDown`, which ends its lineage (resumable), not the run.
- Streaming (`stream`, on for provider models): the answer arrives in chunks, so the read timeout bounds the
  silence between chunks, not the length of a long reasoning answer.
- A wall-clock cap per answer (`answer_timeout_sec`): a model that never stops streams for at most that long. It
  ends the request with a reason naming the setting, and is not retried: the same prompt would run away again. The
  abandoned answer is metered all the same (its tokens were spent): the server's usage if a chunk carried it, else an
  estimate from the prompt and what arrived, flagged `estimated`.
- Recording (`recorder`): every exchange is handed to it once answered (`envevo evolve --record DIR`).
- Budget check before, and usage metering after, every request.

Errors that retrying cannot fix (a bad key, an unknown model, a rejected request) pass straight through.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelQuotaExceededError,
    ModelRequestRejectedError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from envevo.llm._config import ModelSpec, Price
from envevo.llm._errors import EndpointDown, EndpointUnavailable
from envevo.llm._meter import Meter, estimate_tokens
from envevo.llm._per_loop import PerLoop
from envevo.llm._retry import RETRY_STATUS, RetryPolicy


def retryable(exc: ModelAPIError) -> bool:
    """Rate limits, overload, 5xx, timeouts, dropped connections, and garbled responses (a proxy's HTML page
    instead of JSON): worth another try. A request the server rejected as such is not."""
    if isinstance(exc, ModelHTTPError) and exc.status_code in RETRY_STATUS:
        return True
    if isinstance(exc, ModelRequestRejectedError | ModelQuotaExceededError):
        return False
    return not (isinstance(exc, ModelHTTPError) and 400 <= exc.status_code < 500)


class AnswerTimedOut(UnexpectedModelBehavior):
    """One answer outran `answer_timeout_sec`: unusable, like a malformed one. The role fails; the run goes on."""


class Recorder(Protocol):
    """Receives every answered exchange of a guarded model (envevo/llm/_record.py)."""

    def exchange(self, model: str, messages: list[ModelMessage], response: ModelResponse) -> None: ...


class EndpointGates:
    """One semaphore per endpoint (and event loop): a limit shared by all roles on the same server."""

    def __init__(self, limit: int):
        self.limit = limit
        self._gates: dict[str, PerLoop[asyncio.Semaphore]] = {}

    def gate(self, endpoint: str) -> asyncio.Semaphore:
        if endpoint not in self._gates:
            self._gates[endpoint] = PerLoop(lambda: asyncio.Semaphore(self.limit))
        return self._gates[endpoint].get()


def response_cost(response: ModelResponse, price: Price | None) -> float | None:
    """USD for one response: the configured price if any, else genai-prices, else unknown (None)."""
    usage = response.usage
    if price is not None:
        return (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(response.cost().total_price)
    except Exception:  # an unpriced model (most self-hosted ones): tokens are still counted
        return None


class GuardedModel(WrapperModel):
    """Wraps a pydantic-ai model with the endpoint gate, the retry policy and the meter."""

    def __init__(
        self,
        wrapped: Model,
        spec: ModelSpec,
        meter: Meter,
        gates: EndpointGates,
        policy: RetryPolicy | None = None,
        price: Price | None = None,
        sleep=asyncio.sleep,
        waits: list[float] | None = None,
        fresh: Callable[[], Model] | None = None,
        clock: Callable[[], float] = time.monotonic,
        stream: bool = False,
        recorder: Recorder | None = None,
        answer_timeout_sec: float | None = None,
    ):
        super().__init__(wrapped)
        # `wrapped` answers questions about the model; requests go to the running loop's own instance when
        # `fresh` builds one (HTTP connection pools must not be shared between event loops).
        self._live = PerLoop(fresh) if fresh is not None else None
        self.spec = spec
        self.meter = meter
        self.gates = gates
        self.policy = policy or RetryPolicy()
        self.price = price
        self._sleep = sleep  # injectable so tests can observe the waits
        self._clock = clock  # what the retry budget is measured on (tests pair it with their sleep)
        self.stream = stream
        self.recorder = recorder
        self.answer_timeout_sec = answer_timeout_sec
        self._rng = random.Random()
        self.waits = waits if waits is not None else []  # every backoff taken, for logs and tests

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        attempts = self.policy.start(self._clock, self._rng)
        while True:
            self.meter.check()
            try:
                async with self.gates.gate(self.spec.endpoint):
                    live = self._live.get() if self._live is not None else self.wrapped
                    response = await self._answer(live, messages, model_settings, model_request_parameters)
            except ModelAPIError as exc:
                fatal = self._fatal(exc)
                if fatal is not None:
                    raise fatal from exc
                if not retryable(exc):
                    raise
                wait = attempts.next_wait(exc.retry_after)
                if wait is None:
                    raise EndpointDown(
                        f"{self.spec.label} at {self.spec.endpoint} kept failing {attempts.why_not} "
                        f"({_describe(exc)}); the run is resumable: fix the endpoint or wait, then re-run with --resume"
                    ) from exc
                self.waits.append(wait)
                await self._sleep(wait)
                continue
            usage = response.usage
            self.meter.record(self.spec.label, usage.input_tokens, usage.output_tokens, response_cost(response, self.price))
            if self.recorder is not None:
                self.recorder.exchange(self.spec.label, messages, response)
            return response

    async def _answer(self, live: Model, messages: list[ModelMessage], settings: ModelSettings | None,
                      params: ModelRequestParameters) -> ModelResponse:
        """One attempt under the answer's wall-clock cap (the HTTP timeout only bounds silence between chunks)."""
        cap = asyncio.timeout(self.answer_timeout_sec)
        streams: list[StreamedResponse] = []  # the stream in flight, so what arrived can be metered if the cap ends it
        try:
            async with cap:
                return await self._send(live, messages, settings, params, streams)
        except TimeoutError as e:
            if not cap.expired():
                raise
            self._meter_abandoned(messages, streams[0].get() if streams else None)
            raise AnswerTimedOut(f"{self.spec.label} did not finish one answer within {self.answer_timeout_sec:g}s: "
                                 "raise answer_timeout_sec under [llm] for a slow or long-reasoning model, or lower "
                                 "the role's max_output_tokens") from e

    def _meter_abandoned(self, messages: list[ModelMessage], got: ModelResponse | None) -> None:
        """An answer cut at the wall-clock cap spent tokens all the same: they count against the budget. Servers
        send usage in the last chunk, so it is usually estimated from the prompt and the parts that arrived."""
        if got is not None and got.usage.input_tokens:  # the server reported it (some send usage with every chunk)
            usage, estimated = got.usage, False
        else:
            usage = RequestUsage(input_tokens=estimate_tokens(_prompt_text(messages)),
                                 output_tokens=estimate_tokens(_parts_text(got.parts)) if got is not None else 0)
            estimated = True
        priced = replace(got, usage=usage) if got is not None else ModelResponse(
            parts=[], usage=usage, model_name=self.spec.name, provider_name=self.spec.provider)
        self.meter.record(self.spec.label, usage.input_tokens, usage.output_tokens, response_cost(priced, self.price),
                          estimated=estimated)

    async def _send(self, live: Model, messages: list[ModelMessage], settings: ModelSettings | None,
                    params: ModelRequestParameters, streams: list[StreamedResponse]) -> ModelResponse:
        if not self.stream:
            return await live.request(messages, settings, params)
        try:
            async with live.request_stream(messages, settings, params) as streamed:
                streams.append(streamed)
                async for _ in streamed:
                    pass
        except UnexpectedModelBehavior as e:
            if "ended without" not in str(e):
                raise
            # Not one event came back: a body that is no stream at all (a proxy's page) or one cut short. Transient.
            raise ModelAPIError(self.spec.name, f"the streamed answer was empty ({e})") from e
        return streamed.get()

    def _fatal(self, exc: ModelAPIError) -> EndpointUnavailable | None:
        """Errors that stop the run: no role can work until the user fixes the key, the model name or the account."""
        where = f"{self.spec.label} at {self.spec.endpoint}"
        if isinstance(exc, ModelAuthenticationError):
            return EndpointUnavailable(f"{where} rejected the API key: set {self.spec.key_env}")
        if isinstance(exc, ModelNotFoundError):
            return EndpointUnavailable(f"{self.spec.endpoint} does not serve model {self.spec.name!r}; check --model")
        if isinstance(exc, ModelQuotaExceededError):
            return EndpointUnavailable(f"{where}: the account's quota or credits are exhausted")
        return None


def _prompt_text(messages: list[ModelMessage]) -> str:
    """What a request sent: instructions and every part's content or tool arguments (an estimate's input)."""
    bits: list[str] = []
    for m in messages:
        bits.append(getattr(m, "instructions", None) or "")
        bits.append(_parts_text(m.parts))
    return "".join(bits)


def _parts_text(parts) -> str:
    bits: list[str] = []
    for p in parts:
        for value in (getattr(p, "content", None), getattr(p, "args", None)):
            if value is not None:
                bits.append(value if isinstance(value, str) else json.dumps(value, default=str))
    return "".join(bits)


def _describe(exc: ModelAPIError) -> str:
    if isinstance(exc, ModelHTTPError):
        return f"HTTP {exc.status_code}"
    return type(exc).__name__.removeprefix("Model")
