"""The Evolution-Lineage (EL) scheduler, as in the paper, plus three opt-in extensions (each off by default).

The paper's rule (defaults):

- environments are ordered by generation (within a generation: a seeded shuffle of the lineages, or
  ``order="difficulty"``: by D_T);
- the frontier is the current generation: the environments of the lowest generation that still has an
  environment not yet passed. ``next(n)`` serves the first ``n`` of them in that order (cycling when
  fewer than ``n`` are left, so one environment may fill several groups of a batch);
- a group with more than τ·B passes (B = ``group_size``; 7 or 8 of 8 at τ = 6/8) passes its
  environment, and the next environment in the order takes its place;
- when every environment of the generation has passed, the next generation starts.

A group with fewer rollouts than B is judged as if the missing rollouts failed (passes > τ·B); one with
more is judged on its fraction (passes > τ·n). Once everything has passed, EL keeps serving the last
generation of each lineage (``progress()["finished"]``).

Extensions:

- ``patience=P``: an environment with P consecutive groups at 0 passes is *deferred*: it stops blocking
  its lineage (and its generation). Deferred environments come back, with fresh patience, when nothing
  else is left. A later group that passes a deferred environment (a late one) marks it passed.
- ``frontier=True``: each lineage advances independently: the frontier is every lineage's earliest
  environment not yet passed, lineages that are behind served first.
- ``beta=BetaAdvance(...)``: the pass decision uses a Beta posterior over all of the environment's
  rollouts so far (older groups discounted), not one group: an environment passes once
  P(p > τ | rollouts) ≥ confidence and at least ``min_rollouts`` rollouts were seen. Partial groups (a
  trainer that reports rollouts as they finish) can then pass an environment before B rollouts, and a lucky
  group after a history of failures does not.

Every variant keeps one invariant: it never serves a later generation of a lineage before the earlier
ones are passed (or deferred).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from envevo.schedule._base import ObservationFlags, Scheduler
from envevo.schedule._records import EnvTable, Lineages, ScheduleError, state_int
from envevo.schedule._stats import beta_sf

PENDING, PASSED, DEFERRED = 0, 1, 2
_EPS = 1e-9


class BetaAdvance(BaseModel):
    """Options of the Beta-posterior pass decision."""

    model_config = ConfigDict(frozen=True)

    confidence: float = Field(0.65, gt=0, lt=1, description="pass when P(p > τ | rollouts) reaches this")
    prior: tuple[float, float] = Field((1.0, 1.0), description="Beta(a, b) prior on an environment's pass rate")
    discount: float = Field(0.5, gt=0, le=1, description="weight kept by older evidence at each new group")
    min_rollouts: int = Field(4, ge=1, description="no decision on fewer rollouts than this")


class ELScheduler(Scheduler):
    name = "el"

    EXTENSIONS = {
        "patience": {"patience": 4},
        "frontier": {"frontier": True},
        "beta": {"beta": BetaAdvance()},
    }
    _ARRAYS = Scheduler._ARRAYS + ("_status", "_zero_streak", "_alpha", "_beta")

    def __init__(
        self,
        lineages: Lineages | EnvTable,
        group_size: int = 8,
        tau: float = 6 / 8,
        seed: int = 0,
        *,
        pass_threshold: float = 1.0,
        patience: int | None = None,
        frontier: bool = False,
        beta: BetaAdvance | dict[str, object] | None = None,
        order: Literal["shuffle", "difficulty"] = "shuffle",
    ) -> None:
        super().__init__(lineages, group_size=group_size, seed=seed, pass_threshold=pass_threshold)
        if not 0.0 <= tau < 1.0:
            raise ScheduleError(f"tau must be in [0, 1), got {tau}")
        if patience is not None and int(patience) < 1:
            raise ScheduleError(f"patience must be >= 1 (or None: off), got {patience}")
        if order not in ("shuffle", "difficulty"):
            raise ScheduleError(f"order must be 'shuffle' or 'difficulty', got {order!r}")
        self.tau = float(tau)
        self.patience = None if patience is None else int(patience)
        self.frontier = bool(frontier)
        self.beta = BetaAdvance.model_validate(beta) if isinstance(beta, dict) else beta
        self.order = order
        n = len(self.table)
        self._status = np.zeros(n, dtype=np.int8)
        self._zero_streak = np.zeros(n, dtype=np.int64)
        a0, b0 = self.beta.prior if self.beta else (1.0, 1.0)
        self._alpha = np.full(n, a0, dtype=np.float64)
        self._beta = np.full(n, b0, dtype=np.float64)
        self._revisits = 0
        # The serving order: a per-environment key, fixed at construction (from the seed).
        n_lin = len(self.table.lineages)
        rank = np.empty(n_lin, dtype=np.int64)
        rank[self._rng.permutation(n_lin)] = np.arange(n_lin)
        if order == "difficulty":
            dt = np.where(np.isnan(self.table.dt), np.inf, self.table.dt)
            by = np.lexsort((rank[self.table.lineage_of], dt))
            key = np.empty(n, dtype=np.int64)
            key[by] = np.arange(n)
        else:
            key = rank[self.table.lineage_of]
        self._key = key
        self._reset_frontier()

    # -------------------------------------------------------------------------------------- the frontier
    #
    # Each lineage's head is its earliest pending environment. Heads sit in a heap ordered by
    # (generation, key) with lazy deletion, so a status change costs O(log lineages), not a scan.

    def _reset_frontier(self) -> None:
        n_lin = len(self.table.lineages)
        self._ptr = [0] * n_lin
        self._head = [-1] * n_lin
        self._heap: list[tuple[int, int, int]] = []
        for k in range(n_lin):
            self._advance_head(k)
        heapq.heapify(self._heap)
        self._finished = False
        self._check_exhausted()

    def _advance_head(self, k: int) -> None:
        envs = self.table.lineage_envs[k]
        p = self._ptr[k]
        status = self._status
        while p < len(envs) and status[envs[p]] != PENDING:
            p += 1
        self._ptr[k] = p
        head = envs[p] if p < len(envs) else -1
        if head != self._head[k]:
            self._head[k] = head
            if head >= 0:
                heapq.heappush(self._heap, (int(self.table.generation[head]), int(self._key[head]), head))

    def _valid(self, entry: tuple[int, int, int]) -> bool:
        i = entry[2]
        return self._head[int(self.table.lineage_of[i])] == i and self._status[i] == PENDING

    def _check_exhausted(self) -> None:
        """No head left: bring deferred environments back, or (nothing deferred) the pool is finished."""
        while self._heap and not self._valid(self._heap[0]):
            heapq.heappop(self._heap)
        if self._heap:
            return
        if bool((self._status == DEFERRED).any()):
            self._status[self._status == DEFERRED] = PENDING
            self._zero_streak[:] = 0
            self._revisits += 1
            self._reset_frontier()
            return
        self._finished = True
        gen, key = self.table.generation, self._key
        last = [envs[-1] for envs in self.table.lineage_envs]
        self._final = sorted(last, key=lambda i: (int(gen[i]), int(key[i])))

    def _on_status_change(self, i: int) -> None:
        self._advance_head(int(self.table.lineage_of[i]))
        self._check_exhausted()

    def _front(self, limit: int | None) -> list[int]:
        """The window in order: its first ``limit`` environments (all when None)."""
        if self._finished:
            return self._final if limit is None else self._final[:limit]
        taken: list[tuple[int, int, int]] = []
        out: list[int] = []
        level = None
        while self._heap and (limit is None or len(out) < limit):
            entry = heapq.heappop(self._heap)
            if not self._valid(entry):
                continue
            if level is None:
                level = entry[0]
            elif not self.frontier and entry[0] != level:
                taken.append(entry)
                break
            taken.append(entry)
            out.append(entry[2])
        for entry in taken:
            heapq.heappush(self._heap, entry)
        return out

    def window(self) -> list[str]:
        """The environments EL serves now, in order (``next(n)`` takes the first n, cycling)."""
        return [self.table.ids[i] for i in self._front(None)]

    def _select(self, n: int) -> list[int]:
        w = self._front(n)
        return [w[k % len(w)] for k in range(n)]

    # -------------------------------------------------------------------------------------- observations

    def _passes_group(self, i: int, n: int, passes: int) -> bool:
        if self.beta is not None:
            if self._rollouts[i] < self.beta.min_rollouts:
                return False
            return beta_sf(self.tau, float(self._alpha[i]), float(self._beta[i])) >= self.beta.confidence
        return passes > self.tau * max(n, self.group_size) + _EPS

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        n = len(rewards)
        status = int(self._status[i])
        self._zero_streak[i] = self._zero_streak[i] + 1 if passes == 0 else 0
        if self.beta is not None:
            a0, b0 = self.beta.prior
            g = self.beta.discount
            self._alpha[i] = a0 + g * (self._alpha[i] - a0) + passes
            self._beta[i] = b0 + g * (self._beta[i] - b0) + (n - passes)
        flags: ObservationFlags = {"late": status != PENDING}
        if status == PASSED:
            return flags
        if self._passes_group(i, n, passes):
            self._status[i] = PASSED
            flags["advanced"] = True
            self._on_status_change(i)
        elif self.patience is not None and status == PENDING and self._zero_streak[i] >= self.patience:
            self._status[i] = DEFERRED
            flags["deferred"] = True
            self._on_status_change(i)
        return flags

    # -------------------------------------------------------------------------------------- reporting

    def status_of(self, env_id: str) -> str:
        return ("pending", "passed", "deferred")[int(self._status[self.table.position(env_id)])]

    def progress(self) -> dict[str, object]:
        w = self._front(None)
        return {
            **super().progress(),
            "passed": int((self._status == PASSED).sum()),
            "deferred": int((self._status == DEFERRED).sum()),
            "pending": int((self._status == PENDING).sum()),
            "frontier_generations": sorted({int(self.table.generation[i]) for i in w}),
            "revisits": self._revisits,
            "finished": self._finished,
        }

    def _extra_state(self) -> dict[str, object]:
        return {"tau": self.tau, "patience": self.patience, "frontier": self.frontier,
                "beta": self.beta.model_dump(mode="json") if self.beta else None, "order": self.order,
                "key": self._key.tolist(), "revisits": self._revisits}

    def _load_extra_state(self, extra: Mapping[str, object]) -> None:
        mine = {"tau": self.tau, "patience": self.patience, "frontier": self.frontier,
                "beta": self.beta.model_dump(mode="json") if self.beta else None, "order": self.order}
        theirs = {k: extra.get(k) for k in mine}
        if theirs["beta"] is not None:
            theirs["beta"] = BetaAdvance.model_validate(theirs["beta"]).model_dump(mode="json")
        if mine != theirs:
            raise ScheduleError(f"this EL state was saved with other options: {theirs}, not {mine}")
        self._key = np.asarray(extra["key"], dtype=np.int64)
        self._revisits = state_int(extra["revisits"])
        self._reset_frontier()
