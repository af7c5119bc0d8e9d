"""Small statistics with numpy only: Spearman's ρ with a permutation p-value, and means with 95% intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def ranks(x: Sequence[float]) -> np.ndarray:
    """Ranks 1..n, ties getting their average rank."""
    a = np.asarray(x, dtype=float)
    order = np.argsort(a, kind="mergesort")
    r = np.empty(len(a))
    r[order] = np.arange(1, len(a) + 1)
    for v in np.unique(a):
        tie = a == v
        if tie.sum() > 1:
            r[tie] = r[tie].mean()
    return r


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ (Pearson correlation of ranks); None when either side is constant or n < 3."""
    if len(x) != len(y):
        raise ValueError("spearman needs two sequences of equal length")
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def spearman_p(x: Sequence[float], y: Sequence[float], permutations: int = 5000, seed: int = 0) -> float | None:
    """Two-sided permutation p-value of Spearman's ρ (exact in distribution, no normal approximation)."""
    rho = spearman(x, y)
    if rho is None:
        return None
    rx, ry = ranks(x), ranks(y)
    rng = np.random.default_rng(seed)
    perms = np.array([np.corrcoef(rx, rng.permutation(ry))[0, 1] for _ in range(permutations)])
    return float((np.sum(np.abs(perms) >= abs(rho) - 1e-12) + 1) / (permutations + 1))


def mean_ci(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and the half-width of its 95% interval (normal approximation; None for fewer than two values)."""
    if not values:
        return None, None
    a = np.asarray(values, dtype=float)
    if len(a) < 2:
        return float(a.mean()), None
    return float(a.mean()), float(1.96 * a.std(ddof=1) / math.sqrt(len(a)))
