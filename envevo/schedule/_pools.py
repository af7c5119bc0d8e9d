"""Difficulty pools, as in prime-rl's orchestrator buffer: easy / normal / hard, sampled by fixed weights."""

from __future__ import annotations

import numpy as np

from envevo.schedule._base import ObservationFlags, Scheduler
from envevo.schedule._records import EnvTable, Lineages

NORMAL, EASY, HARD = 0, 1, 2


class PoolsScheduler(Scheduler):
    """Every environment starts in the normal pool. After each group its mean reward moves it: ≥
    ``easy_threshold`` → easy, ≤ ``hard_threshold`` → hard, otherwise normal. A batch of n takes
    int(n·easy_fraction) from easy, int(n·hard_fraction) from hard and the rest from normal (each without
    replacement; shortfalls come from normal, then from the whole pool). Thresholds follow prime-rl's
    documented example (0.8 / 0.2); the fractions default to 0.1 each, so that environments can leave the
    easy and hard pools as the policy changes (prime-rl's own default of 0 retires them)."""

    name = "pools"

    _ARRAYS = Scheduler._ARRAYS + ("_pool",)

    def __init__(self, lineages: Lineages | EnvTable, *, group_size: int = 8, seed: int = 0, pass_threshold: float = 1.0,
                 easy_threshold: float = 0.8, hard_threshold: float = 0.2, easy_fraction: float = 0.1,
                 hard_fraction: float = 0.1) -> None:
        super().__init__(lineages, group_size=group_size, seed=seed, pass_threshold=pass_threshold)
        self.easy_threshold, self.hard_threshold = float(easy_threshold), float(hard_threshold)
        self.easy_fraction, self.hard_fraction = float(easy_fraction), float(hard_fraction)
        self._pool = np.zeros(len(self.table), dtype=np.int8)

    def pool_of(self, env_id: str) -> str:
        return ("normal", "easy", "hard")[int(self._pool[self.table.position(env_id)])]

    def _select(self, n: int) -> list[int]:
        easy = np.flatnonzero(self._pool == EASY)
        hard = np.flatnonzero(self._pool == HARD)
        normal = np.flatnonzero(self._pool == NORMAL)
        n_easy = min(int(n * self.easy_fraction), len(easy))
        n_hard = min(int(n * self.hard_fraction), len(hard))
        n_normal = min(n - n_easy - n_hard, len(normal))
        out = self._uniform(n_easy, easy) + self._uniform(n_hard, hard) + self._uniform(n_normal, normal)
        return out + self._uniform(n - len(out))

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        mean = sum(rewards) / len(rewards)
        self._pool[i] = EASY if mean >= self.easy_threshold else HARD if mean <= self.hard_threshold else NORMAL
        return {}
