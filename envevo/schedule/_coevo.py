"""A co-evolution-style baseline: seeds and weakness-targeted variants of them, nothing else.

On-policy co-evolution only attacks the policy's weakness δ_θ, and only the skill term inside the seed's
scenarios (docs/difficulty.md): its variants keep the seed's scenarios and change skills. A lineage store holds
such variants only where evolution happened to take skill edits alone: the versions whose scenario
sequence is exactly the seed's. Those versions (and the seeds) are all this baseline draws from; every
scenario or length edit, and everything descended from one, is out of its reach. When a pool holds no such
variant, it serves seeds only and says so in ``notes``.

Weakness is estimated on-policy, from the groups observed: each skill keeps a moving average of the
failure rate of the groups on environments that use it (prior 0.5). A variant's weakness score is the mean
over the skills it introduced (those not in its seed); variants are drawn ∝ exp(score / temperature).
"""

from __future__ import annotations

import math

import numpy as np

from envevo.schedule._base import ObservationFlags, Scheduler
from envevo.schedule._records import EnvTable, Lineages


class CoevoScheduler(Scheduler):
    name = "coevo"

    _ARRAYS = Scheduler._ARRAYS + ("_weak",)

    def __init__(self, lineages: Lineages | EnvTable, *, group_size: int = 8, seed: int = 0, pass_threshold: float = 1.0,
                 seed_fraction: float = 0.5, temperature: float = 0.1, ema: float = 0.3) -> None:
        super().__init__(lineages, group_size=group_size, seed=seed, pass_threshold=pass_threshold)
        self.seed_fraction, self.temperature, self.ema = float(seed_fraction), float(temperature), float(ema)
        recs = self.table.records
        skills: dict[str, int] = {}
        self._env_skills: list[list[int]] = []
        for r in recs:
            ks = [skills.setdefault(s.skill, len(skills)) for s in r.trace.steps] if r.trace else []
            self._env_skills.append(ks)
        self._skill_names = list(skills)
        self._weak = np.full(len(skills), 0.5, dtype=np.float64)
        seeds, variants, targets = [], [], []
        for envs in self.table.lineage_envs:
            s = envs[0]
            seeds.append(s)
            st = recs[s].trace
            if st is None:
                continue
            scen = [x.scenario for x in st.steps]
            base = set(self._env_skills[s])
            for i in envs[1:]:
                t = recs[i].trace
                if t is not None and [x.scenario for x in t.steps] == scen:
                    new = sorted(set(self._env_skills[i]) - base)
                    if new:
                        variants.append(i)
                        targets.append(new)
        self._seeds = np.asarray(seeds, dtype=np.int64)
        self._variants = np.asarray(variants, dtype=np.int64)
        self._targets = targets
        lens = np.asarray([len(t) for t in targets], dtype=np.int64)
        self._t_flat = np.asarray([k for t in targets for k in t], dtype=np.int64)
        self._t_start = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if len(lens) else lens
        self._t_len = lens
        if not variants:
            self.notes.append("no seed in this pool has a skill-only variant (same scenarios as the seed): "
                              "coevo serves seeds only")

    @property
    def eligible(self) -> list[str]:
        """The environments this baseline can ever serve: seeds and their skill-only variants."""
        return [self.table.ids[i] for i in [*self._seeds.tolist(), *self._variants.tolist()]]

    def variant_weights(self) -> np.ndarray:
        if not len(self._variants):
            return np.zeros(0)
        score = np.add.reduceat(self._weak[self._t_flat], self._t_start) / self._t_len
        w: np.ndarray = np.exp((score - score.max()) / self.temperature)
        normalized: np.ndarray = w / w.sum()
        return normalized

    def _select(self, n: int) -> list[int]:
        n_var = 0 if not len(self._variants) else int(self._rng.binomial(n, 1.0 - self.seed_fraction))
        out = self._uniform(n - n_var, self._seeds)
        if n_var:
            out += self._variants[self._rng.choice(len(self._variants), size=n_var, p=self.variant_weights())].tolist()
        return out

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        fail = 1.0 - passes / len(rewards)
        for k in set(self._env_skills[i]):
            self._weak[k] = (1.0 - self.ema) * self._weak[k] + self.ema * fail
        return {}

    def weakness(self) -> dict[str, float]:
        return {k: float(self._weak[j]) for j, k in enumerate(self._skill_names) if math.isfinite(self._weak[j])}
