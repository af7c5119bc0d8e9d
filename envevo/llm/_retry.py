"""The one retry policy for model HTTP: which answers are worth another try, and how long to wait before it.

Both paths that talk to models use it: the guarded pydantic-ai models of the LLM engine's roles (async) and the
llm p_T estimator's plain HTTP client (sync). Waits honour the server's `retry-after`; without one they back off
exponentially with ±25% jitter, so concurrent lineages do not retry in lockstep.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: Rate limits, conflicts, overload and server errors: transient by convention.
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: A server asking for a longer pause than this is treated as down, not busy.
MAX_RETRY_AFTER_SEC = 600.0


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
    max_retries: int = 5
    base_sec: float = 1.0
    max_backoff_sec: float = 60.0

    def wait(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds before retry number `attempt` (1-based): the server's retry-after if it gave one,
        else exponential backoff with ±25% jitter."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER_SEC)
        backoff = min(self.base_sec * 2 ** (attempt - 1), self.max_backoff_sec)
        return backoff * rng.uniform(0.75, 1.25)
