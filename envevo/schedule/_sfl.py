"""Sampling For Learnability (Rutherford et al., 2024): prefer environments with high p(1 − p)."""

from __future__ import annotations

import math

import numpy as np

from envevo.schedule._base import ObservationFlags, Scheduler
from envevo.schedule._records import EnvTable, Lineages


class SFLScheduler(Scheduler):
    """Learnability p(1 − p) is largest at p = 0.5, where a group of B rollouts is least likely to be all
    pass or all fail. The pass-rate estimate p̂ of an environment is an exponential moving average of its
    groups' pass rates (weight ``ema`` on the newest). Each batch takes a fraction ``rho`` from a buffer of
    the ``buffer_frac`` most learnable observed environments (at least n), uniformly, and the rest
    uniformly from the whole pool (which is also how unobserved environments get estimated)."""

    name = "sfl"

    _ARRAYS = Scheduler._ARRAYS + ("_phat",)

    def __init__(self, lineages: Lineages | EnvTable, *, group_size: int = 8, seed: int = 0, pass_threshold: float = 1.0,
                 rho: float = 0.5, buffer_frac: float = 0.1, ema: float = 0.5) -> None:
        super().__init__(lineages, group_size=group_size, seed=seed, pass_threshold=pass_threshold)
        self.rho, self.buffer_frac, self.ema = float(rho), float(buffer_frac), float(ema)
        self._phat = np.full(len(self.table), np.nan, dtype=np.float64)

    def learnability(self) -> np.ndarray:
        """p̂(1 − p̂) per environment; −1 where nothing was observed yet."""
        p = self._phat
        return np.where(np.isnan(p), -1.0, p * (1.0 - p))

    def buffer(self, n: int) -> np.ndarray:
        score = self.learnability()
        k = min(len(score), max(n, math.ceil(self.buffer_frac * len(score))))
        top = np.argpartition(-score, k - 1)[:k] if k < len(score) else np.arange(len(score))
        return np.sort(top[score[top] > 0])

    def _select(self, n: int) -> list[int]:
        buf = self.buffer(n)
        n_buf = int(round(self.rho * n)) if len(buf) else 0
        return self._uniform(n_buf, buf) + self._uniform(n - n_buf)

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        rate = passes / len(rewards)
        old = self._phat[i]
        self._phat[i] = rate if np.isnan(old) else (1.0 - self.ema) * old + self.ema * rate
        return {}
