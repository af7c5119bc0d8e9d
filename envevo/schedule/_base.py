"""The one scheduler interface every curriculum implements, and building one from a spec.

A trainer drives a scheduler with two calls:

- ``next(n)``: the ids of the next ``n`` groups to roll out (an id may repeat: each entry is one group of
  ``group_size`` rollouts on that environment);
- ``observe(env_id, rewards)``: one finished group; returns an :class:`Observation` saying whether to keep
  the group in the training batch and what the scheduler did with it.

Groups may finish in any order and long after they were served (asynchronous trainers): every observation
updates its environment's statistics, including one that arrives after its environment was advanced
(``Observation.late``) or one the scheduler never served (``solicited=False``, e.g. after a restart from an
older checkpoint). ``state_dict()`` / ``load_state_dict()`` round-trip everything, RNG included, as plain
JSON-able data; two schedulers built with the same pool, options and seed make the same decisions.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypedDict

import numpy as np
from pydantic import BaseModel, ConfigDict

from envevo.schedule._records import EnvTable, Lineages, ScheduleError
from envevo.schedule._registry import scheduler_class

STATE_FORMAT = 1


class Observation(BaseModel):
    """What a scheduler made of one finished group."""

    model_config = ConfigDict(frozen=True)

    env_id: str
    passes: int
    n: int
    keep: bool = True
    """False: leave this group out of the training batch (dynamic sampling drops zero-variance groups)."""
    late: bool = False
    """The environment had already advanced (passed or deferred) when this group arrived; still accounted."""
    solicited: bool = True
    """The scheduler had served this environment and was waiting for a group of it."""
    advanced: bool = False
    """This group passed the environment: the curriculum moved on."""
    deferred: bool = False
    """This group deferred the environment (patience ran out at 0 passes)."""


class ObservationFlags(TypedDict, total=False):
    """What a scheduler's `_observe` says of a group, beyond the base statistics (the :class:`Observation` flags)."""

    keep: bool
    late: bool
    advanced: bool
    deferred: bool


class Scheduler(ABC):
    """Base of every curriculum. Subclasses implement ``_select`` and may override ``_observe``."""

    name: ClassVar[str] = ""
    """The name it is registered under in `envevo/schedule/_registry.py` (its one-line summary lives there)."""
    dynamic_sampling: ClassVar[bool] = False
    """True: a trainer should refill the batch for groups observed with ``keep=False`` (call ``next`` again)."""
    EXTENSIONS: ClassVar[dict[str, dict[str, Any]]] = {}
    """Opt-in extensions addressable as ``name+ext`` in :func:`make_scheduler`: ext -> constructor options."""

    _ARRAYS: ClassVar[tuple[str, ...]] = (
        "_served", "_in_flight", "_groups", "_rollouts", "_passes", "_reward_sum", "_last_rate", "_last_served",
        "_late",
    )

    def __init__(self, lineages: Lineages | EnvTable, *, group_size: int = 8, seed: int = 0,
                 pass_threshold: float = 1.0) -> None:
        if int(group_size) < 1:
            raise ScheduleError(f"group_size must be >= 1, got {group_size}")
        self.table = lineages if isinstance(lineages, EnvTable) else EnvTable(lineages)
        self.group_size = int(group_size)
        self.seed = int(seed)
        self.pass_threshold = float(pass_threshold)
        self._rng = np.random.default_rng(self.seed)
        n = len(self.table)
        self._served = np.zeros(n, dtype=np.int64)
        self._in_flight = np.zeros(n, dtype=np.int64)
        self._groups = np.zeros(n, dtype=np.int64)
        self._rollouts = np.zeros(n, dtype=np.int64)
        self._passes = np.zeros(n, dtype=np.int64)
        self._reward_sum = np.zeros(n, dtype=np.float64)
        self._last_rate = np.full(n, np.nan, dtype=np.float64)
        self._last_served = np.full(n, -1, dtype=np.int64)
        self._late = np.zeros(n, dtype=np.int64)
        self._t = 0  # groups served so far: the scheduler's clock
        self.counters: dict[str, int] = {"served": 0, "observed": 0, "late": 0, "unsolicited": 0, "dropped": 0}
        self.notes: list[str] = []
        self.spec = self.name  # the spec it was built from (make_scheduler sets e.g. "el+patience")

    # ------------------------------------------------------------------------------------------ interface

    @property
    def env_ids(self) -> list[str]:
        return list(self.table.ids)

    def __len__(self) -> int:
        return len(self.table)

    def next(self, n: int) -> list[str]:
        """The next ``n`` environment ids to roll out, one group each."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ScheduleError(f"next(n) needs a whole number n >= 0, got {n!r}")
        if n == 0:
            return []
        idx = [int(i) for i in self._select(int(n))]
        if len(idx) != n:  # pragma: no cover - a subclass bug, not a user error
            raise RuntimeError(f"{type(self).__name__}._select returned {len(idx)} ids for n={n}")
        ids = self.table.ids
        for i in idx:
            self._served[i] += 1
            self._in_flight[i] += 1
            self._last_served[i] = self._t
            self._t += 1
        self.counters["served"] += n
        return [ids[i] for i in idx]

    def observe(self, env_id: str, rewards: Sequence[float]) -> Observation:
        """Record one finished group of ``env_id``."""
        i = self.table.position(env_id)
        r = [float(x) for x in rewards]
        if not r:
            raise ScheduleError(f"observe({env_id!r}, …) got no rewards")
        if not all(math.isfinite(x) for x in r):
            raise ScheduleError(f"observe({env_id!r}, …) got a reward that is not a finite number")
        passes = sum(1 for x in r if x >= self.pass_threshold)
        solicited = bool(self._in_flight[i] > 0)
        if solicited:
            self._in_flight[i] -= 1
        else:
            self.counters["unsolicited"] += 1
        self._groups[i] += 1
        self._rollouts[i] += len(r)
        self._passes[i] += passes
        self._reward_sum[i] += sum(r)
        self._last_rate[i] = passes / len(r)
        self.counters["observed"] += 1
        flags = self._observe(i, r, passes)
        if flags.get("late"):
            self._late[i] += 1
            self.counters["late"] += 1
        if flags.get("keep") is False:
            self.counters["dropped"] += 1
        return Observation(env_id=env_id, passes=passes, n=len(r), solicited=solicited, **flags)

    def stats(self, env_id: str) -> dict[str, str | int | float | None]:
        """What the scheduler knows about one environment."""
        i = self.table.position(env_id)
        rate = self._last_rate[i]
        return {
            "env_id": env_id,
            "served": int(self._served[i]),
            "in_flight": int(self._in_flight[i]),
            "groups": int(self._groups[i]),
            "rollouts": int(self._rollouts[i]),
            "passes": int(self._passes[i]),
            "mean_reward": float(self._reward_sum[i] / self._rollouts[i]) if self._rollouts[i] else None,
            "last_pass_rate": None if math.isnan(rate) else float(rate),
            "late_groups": int(self._late[i]),
        }

    def progress(self) -> dict[str, object]:
        """Counters for logging (served, observed, late, unsolicited, dropped groups) plus scheduler-specific ones."""
        return {"scheduler": self.name, "environments": len(self.table), **self.counters}

    # ------------------------------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        arrays = {}
        for a in self._ARRAYS:
            v = getattr(self, a)
            arrays[a] = [None if math.isnan(x) else x for x in v.tolist()] if v.dtype.kind == "f" else v.tolist()
        return {
            "format": STATE_FORMAT,
            "scheduler": self.name,
            "fingerprint": self.table.fingerprint,
            "group_size": self.group_size,
            "seed": self.seed,
            "t": self._t,
            "counters": dict(self.counters),
            "rng": self._rng.bit_generator.state,
            "arrays": arrays,
            "extra": self._extra_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("format") != STATE_FORMAT:
            raise ScheduleError(f"unknown scheduler state format {state.get('format')!r}")
        if state.get("scheduler") != self.name:
            raise ScheduleError(f"this state is for scheduler {state.get('scheduler')!r}, not {self.name!r}")
        if state.get("fingerprint") != self.table.fingerprint:
            raise ScheduleError("this state was saved for a different environment pool (ids differ)")
        self._t = int(state["t"])
        self.counters = {k: int(v) for k, v in state["counters"].items()}
        self._rng.bit_generator.state = state["rng"]
        for a in self._ARRAYS:
            cur = getattr(self, a)
            vals = state["arrays"][a]
            if cur.dtype.kind == "f":
                vals = [np.nan if x is None else x for x in vals]
            setattr(self, a, np.asarray(vals, dtype=cur.dtype))
        self._load_extra_state(state.get("extra") or {})

    # ------------------------------------------------------------------------------------------ hooks

    @abstractmethod
    def _select(self, n: int) -> Sequence[int]:
        """n environment indices to serve next."""

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        """Scheduler-specific bookkeeping after the base statistics were updated; returns Observation flags."""
        return {}

    def _extra_state(self) -> dict[str, object]:
        return {}

    def _load_extra_state(self, extra: Mapping[str, object]) -> None:
        return None

    def _uniform(self, n: int, pool: np.ndarray | None = None) -> list[int]:
        """n indices drawn uniformly from ``pool`` (default: every environment), without replacement when
        the pool is large enough."""
        size = len(self.table) if pool is None else len(pool)
        if size == 0:
            return []
        if n <= size:
            pick = self._rng.choice(size, size=n, replace=False)
        else:
            pick = self._rng.integers(size, size=n)
        chosen: list[int] = pick.tolist() if pool is None else pool[pick].tolist()
        return chosen


# -------------------------------------------------------------------------------------------- building


def parse_spec(spec: str) -> tuple[type[Scheduler], dict[str, Any]]:
    """``el``, ``el+patience``, ``el+frontier+beta``: a registered name plus opt-in extensions."""
    base, *exts = [p.strip() for p in spec.strip().split("+")]
    cls = scheduler_class(base)
    options: dict[str, Any] = {}
    for ext in exts:
        if ext not in cls.EXTENSIONS:
            known = ", ".join(cls.EXTENSIONS) or "none"
            raise ScheduleError(f"scheduler {base!r} has no extension {ext!r} (extensions: {known})")
        options.update(cls.EXTENSIONS[ext])
    return cls, options


def make_scheduler(spec: str, lineages: Lineages | EnvTable, *, seed: int = 0, group_size: int = 8,
                   **options: Any) -> Scheduler:
    """Build a scheduler from a spec (see :func:`parse_spec`). Options a scheduler does not take (``tau`` for
    ``random``, say) are ignored, so one set of options can build every scheduler in a comparison."""
    cls, ext_options = parse_spec(spec)
    params = inspect.signature(cls.__init__).parameters
    kwargs = {k: v for k, v in options.items() if k in params}
    kwargs.update(ext_options)
    sched = cls(lineages, group_size=group_size, seed=seed, **kwargs)
    sched.spec = spec
    return sched
