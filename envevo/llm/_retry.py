"""The one retry policy for model HTTP: which answers are worth another try, how long to wait, and when to stop.

Every path that talks to models uses it: the guarded pydantic-ai models of the LLM engine's roles, the LLM red
team and `rubric learn` (async, through envevo/llm/_guard.py), and the llm p_T estimator's plain HTTP client
(sync, envevo/llm/_reference_prior.py).

A call is retried for as long as its time budget lasts, not a fixed number of times: provider overload bursts
(Anthropic's 529s, OpenAI's 503s) often last minutes. The budget (default 15 minutes) counts from the call's first
failure, the start of the outage, so a long streamed answer that fails late still gets all of it. Waits honour the
server's `retry-after`; without one they back off exponentially with ±25% jitter, so concurrent lineages do not
retry in lockstep. A wait that would end past the budget is not taken: the call gives up at once, with the reason.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Rate limits, conflicts, overload and server errors: transient by convention.
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: How long one call may keep retrying, from its first failure.
DEFAULT_BUDGET_SEC = 15 * 60.0


def retryable_status(status: int) -> bool:
    """An HTTP status worth retrying: the transient ones above, and any 5xx."""
    return status in RETRY_STATUS or status >= 500


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `retry-after` header given in seconds (an HTTP date is ignored: backoff applies)."""
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


@dataclass
class RetryPolicy:
    """`budget_sec` bounds the time a call spends retrying; `max_retries`, when set, also bounds the count."""

    budget_sec: float = DEFAULT_BUDGET_SEC
    base_sec: float = 1.0
    max_backoff_sec: float = 60.0
    max_retries: int | None = None

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential backoff with ±25% jitter before retry number `attempt` (1-based)."""
        return min(self.base_sec * 2 ** (attempt - 1), self.max_backoff_sec) * rng.uniform(0.75, 1.25)

    def start(self, clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None) -> Attempts:
        """The retry state of one call; its budget starts at its first failure."""
        return Attempts(self, clock, rng or random.Random())


@dataclass
class Attempts:
    """One call's retries: ask `next_wait` after each transient failure; sleep that long, or give up on None."""

    policy: RetryPolicy
    clock: Callable[[], float]
    rng: random.Random
    outage: float | None = None  # when the first failure was seen: the budget counts from there
    retries: int = 0
    waited: list[float] = field(default_factory=list)
    why_not: str = ""  # why the last next_wait gave up

    def elapsed(self) -> float:
        """Seconds since the first failure (0 before any)."""
        return 0.0 if self.outage is None else self.clock() - self.outage

    def next_wait(self, retry_after: float | None = None) -> float | None:
        """Seconds to wait before the next attempt, or None when the budget (or the retry cap) is spent."""
        p = self.policy
        if self.outage is None:
            self.outage = self.clock()
        if p.max_retries is not None and self.retries >= p.max_retries:
            self.why_not = f"after {self.retries} retries"
            return None
        left = p.budget_sec - self.elapsed()
        # Without retry-after, the last wait is cut to what is left, so the budget's end gets one more attempt.
        wait = max(retry_after, 0.0) if retry_after is not None else min(self.backoff(), max(left, 0.0))
        if wait > left or left <= 0:
            asked = f"; the server asked to wait {retry_after:.0f}s" if retry_after is not None else ""
            # The real time spent retrying: a streamed answer that failed late did not eat into it.
            spent = f"for {self.elapsed():.0f}s from its first failure" if self.retries else "at its first failure"
            self.why_not = f"{spent}, its retry budget of {p.budget_sec:g}s{asked}"
            return None
        self.retries += 1
        self.waited.append(wait)
        return wait

    def backoff(self) -> float:
        return self.policy.backoff(self.retries + 1, self.rng)
