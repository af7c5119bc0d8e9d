"""Prioritized Level Replay (Jiang, Grefenstette and Rocktäschel, 2021), rank-scored with staleness."""

from __future__ import annotations

import numpy as np

from envevo.schedule._base import ObservationFlags, Scheduler
from envevo.schedule._records import EnvTable, Lineages


class PLRScheduler(Scheduler):
    """PLR on a finite pool.

    - Score of an environment: the mean absolute GRPO advantage of its last group, mean |r − r̄| (PLR's L1
      value-loss score, with the group mean as the baseline).
    - Each slot of a batch replays with probability (seen / all) and otherwise takes an environment never
      served (uniformly); replay draws from P = (1 − ρ)·P_S + ρ·P_C, where P_S ∝ (1 / rank)^(1/β) ranks
      seen environments by score and P_C ∝ (clock − last served) is staleness. Defaults β = 0.1, ρ = 0.1
      (the paper's).
    - Environments served but not yet scored are neither new nor replayable until their group arrives.
    """

    name = "plr"

    _ARRAYS = Scheduler._ARRAYS + ("_score", "_scored")

    def __init__(self, lineages: Lineages | EnvTable, *, group_size: int = 8, seed: int = 0, pass_threshold: float = 1.0,
                 temperature: float = 0.1, staleness: float = 0.1) -> None:
        super().__init__(lineages, group_size=group_size, seed=seed, pass_threshold=pass_threshold)
        self.temperature = float(temperature)
        self.staleness = float(staleness)
        n = len(self.table)
        self._score = np.zeros(n, dtype=np.float64)
        self._scored = np.zeros(n, dtype=np.bool_)

    def replay_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices of scored environments, their replay probabilities)."""
        seen = np.flatnonzero(self._scored)
        if len(seen) == 0:
            return seen, np.zeros(0)
        order = np.argsort(-self._score[seen], kind="stable")
        rank = np.empty(len(seen), dtype=np.float64)
        rank[order] = np.arange(1, len(seen) + 1)
        h = rank ** (-1.0 / self.temperature)
        p_s = h / h.sum()
        stale = (self._t - self._last_served[seen]).astype(np.float64)
        p_c = stale / stale.sum() if stale.sum() > 0 else np.full(len(seen), 1.0 / len(seen))
        p = (1.0 - self.staleness) * p_s + self.staleness * p_c
        return seen, p / p.sum()

    def _select(self, n: int) -> list[int]:
        unseen = np.flatnonzero(self._served == 0)
        seen, p = self.replay_distribution()
        if len(seen) == 0 and len(unseen) == 0:  # everything in flight and unscored: nothing to prefer
            return self._uniform(n)
        if len(unseen) == 0:
            n_new = 0
        elif len(seen) == 0:
            n_new = n
        else:
            n_new = n - int(self._rng.binomial(n, len(seen) / len(self.table)))
        out = self._uniform(n_new, unseen) if n_new else []
        if n > n_new:
            out += seen[self._rng.choice(len(seen), size=n - n_new, p=p)].tolist()
        return out

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        m = sum(rewards) / len(rewards)
        self._score[i] = sum(abs(r - m) for r in rewards) / len(rewards)
        self._scored[i] = True
        return {}
