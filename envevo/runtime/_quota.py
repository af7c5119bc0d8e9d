"""Sandbox quotas and provider backoff, shared by every trial of the process (all lineages, all commands).

- `--max-sandboxes N`: at most N trials' sandboxes alive at once; a trial waits for a slot before it starts.
- `--start-rate R`: at most R sandbox starts per second (a token bucket with a burst of one).
- A provider error (quota, 429, 5xx, a dropped connection) says nothing about the task or the agent: the trial
  is an infrastructure error, retried after a backoff, and every start waits out that backoff too, so a
  provider that pushes back gets fewer requests, not more (backpressure).

The limiter is pluggable (`set_limiter`): the Ray executor installs one that asks a single cluster-wide actor,
so the quota holds across workers.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass
from typing import Protocol

# Exception type names and message patterns of a provider pushing back or failing, whatever the environment.
PROVIDER_ERRORS = {
    "RateLimitError", "TooManyRequests", "QuotaExceededError", "ServiceUnavailableError", "InternalServerError",
    "ConnectionError", "ConnectionResetError", "ConnectionRefusedError", "ConnectionAbortedError", "BrokenPipeError",
    "RemoteDisconnected", "ServerDisconnectedError", "ClientConnectorError", "ClientOSError", "ReadError",
    "RemoteProtocolError", "ConnectError", "ReadTimeout", "ConnectTimeout", "ProviderError",
}
_PROVIDER_TEXT = re.compile(
    r"\b(429|500|502|503|504)\b|too many requests|rate.?limit|quota|service unavailable|bad gateway|"
    r"gateway time-?out|connection (reset|refused|aborted|closed|lost)|server disconnected|remote end closed",
    re.I,
)


def is_provider_error(kind: str, message: str = "") -> bool:
    """A quota, 429, 5xx or dropped connection, by exception type name or by message."""
    return kind in PROVIDER_ERRORS or bool(_PROVIDER_TEXT.search(message))


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: attempt n waits up to base·2ⁿ, at most `cap` seconds."""

    base: float = 1.0
    cap: float = 30.0
    attempts: int = 6  # provider retries per trial before it is reported as an infrastructure error

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        return (rng or random).uniform(0, min(self.cap, self.base * 2 ** attempt))


class Limiter(Protocol):
    async def acquire(self) -> None: ...
    async def release(self) -> None: ...
    async def pause(self, seconds: float) -> None: ...


class LocalLimiter:
    """Quota state in this process: a counter of alive sandboxes, a start-rate bucket and a provider pause."""

    def __init__(self, max_sandboxes: int | None = None, start_rate: float | None = None):
        if max_sandboxes is not None and max_sandboxes < 1:
            raise ValueError("max_sandboxes must be at least 1")
        if start_rate is not None and start_rate <= 0:
            raise ValueError("start_rate must be positive")
        self.max_sandboxes = max_sandboxes
        self.start_rate = start_rate
        self.alive = 0
        self.peak = 0
        self.starts = 0
        self._next_start = 0.0  # monotonic time of the next allowed start
        self._paused_until = 0.0
        self._changed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _cond(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._changed is None or self._loop is not loop:  # a condition belongs to the loop that runs the trials
            self._changed, self._loop = asyncio.Condition(), loop
        return self._changed

    async def acquire(self) -> None:
        if self.max_sandboxes is not None:
            cond = self._cond()
            async with cond:
                await cond.wait_for(lambda: self.max_sandboxes is None or self.alive < self.max_sandboxes)
        self.alive += 1
        self.peak = max(self.peak, self.alive)
        while True:  # the rate and any provider pause: wait outside the lock, so releases are not held up
            now = time.monotonic()
            wait = max(self._paused_until, self._next_start) - now
            if wait <= 0:
                self._next_start = now + (1 / self.start_rate if self.start_rate else 0)
                self.starts += 1
                return
            await asyncio.sleep(wait)

    async def release(self) -> None:
        self.alive -= 1
        if self.max_sandboxes is not None:
            cond = self._cond()
            async with cond:
                cond.notify_all()

    async def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)


_limiter: Limiter = LocalLimiter()
_backoff = Backoff()


def set_quota(max_sandboxes: int | None = None, start_rate: float | None = None, backoff: Backoff | None = None) -> LocalLimiter:
    """Set this process's quotas (the CLI's --max-sandboxes and --start-rate); returns the new limiter."""
    global _limiter, _backoff
    limiter = LocalLimiter(max_sandboxes, start_rate)
    _limiter, _backoff = limiter, backoff or _backoff
    return limiter


def set_limiter(limiter: Limiter) -> None:
    global _limiter
    _limiter = limiter


def quota_settings() -> tuple[int | None, float | None]:
    """(max_sandboxes, start_rate) of the process's own limiter, to hand to another process."""
    lim = _limiter
    return (lim.max_sandboxes, lim.start_rate) if isinstance(lim, LocalLimiter) else (None, None)


def backoff() -> Backoff:
    return _backoff


def limiter() -> Limiter:
    return _limiter


def quota_active() -> bool:
    """Whether a quota is set (or a limiter installed): local sandboxes then count too."""
    return quota_settings() != (None, None) or not isinstance(_limiter, LocalLimiter)


async def provider_wait(attempt: int) -> None:
    """Back off after a provider error: this caller, and every start of the process for as long."""
    delay = backoff().delay(attempt)
    await limiter().pause(delay)
    await asyncio.sleep(delay)
