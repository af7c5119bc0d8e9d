"""The simulator's synthetic learner: a competence per skill, a familiarity per scenario, GRPO-style updates.

Success on an environment is the product over the pairs of its ξ of a per-step success:

    p(E) = Π_t sigmoid(z_t),   z_t = base + c[κ_t] + f[σ_{t-1}] − λ·(r_t − r̄)

where r_t is the pair's share of D_T (−log p_T(σ|g) − log p_T(κ|σ,g)): rare scenarios and skills are
harder, longer chains multiply more steps. For ξ over the procedural catalog r_t comes from the catalog
prior; for other ξ it is D_T / L (or r̄ when D_T is unknown). Competence c and familiarity f start at small
seeded noise, so the prior p_T plays the role of what the learner already knows.

A GRPO update on a group of rewards r_1..B moves c and f only when the rewards differ: with advantages
A_i = r_i − mean(r), the step size is the mean |A_i| (all-pass and all-fail groups have none), spread over
the group's steps by ∂log p/∂z_t = 1 − sigmoid(z_t) (the bottleneck steps learn most), and averaged over
the batch (a zero-variance group still takes its slot in the batch, as in GRPO). Nothing else changes the
learner: it does not forget, and it never sees environments it was not served.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from envevo.schedule._records import EnvRecord

if TYPE_CHECKING:
    from envevo.catalog import CatalogPrior


class LearnerConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    base: float = Field(1.8, description="step logit at the reference rarity with zero competence")
    rarity_weight: float = Field(0.9, description="λ: logits lost per nat of pair rarity")
    rarity_ref: float = Field(5.0, description="r̄: the reference pair rarity (nats)")
    init_noise: float = Field(0.3, description="sd of the seeded initial competence and familiarity")
    lr_skill: float = Field(0.3, description="learning rate of competence per skill")
    lr_scenario: float = Field(0.15, description="learning rate of familiarity per scenario")
    normalize_std: bool = Field(False, description="GRPO advantages divided by the group's std (Dr. GRPO: no)")


class CompiledEnvs:
    """Padded index arrays of environments' ξ over the learner's vocabulary."""

    def __init__(self, skills: np.ndarray, scenarios: np.ndarray, rarity: np.ndarray, mask: np.ndarray) -> None:
        self.skills, self.scenarios, self.rarity, self.mask = skills, scenarios, rarity, mask

    def __len__(self) -> int:
        return len(self.mask)


@cache
def _catalog_prior() -> CatalogPrior:
    from envevo.catalog import CatalogPrior

    return CatalogPrior()


def _pair_costs(rec: EnvRecord) -> list[float]:
    """Each pair's share of D_T: exact under the catalog prior for catalog ξ, else D_T / L (NaN: unknown)."""
    from envevo.catalog import SCENARIOS, compatible

    steps = rec.trace.steps if rec.trace else ()
    if steps and all(s.scenario in SCENARIOS and compatible(s.scenario, s.skill) for s in steps):
        prior = _catalog_prior()
        return [prior.pair_cost(s.scenario, s.skill, rec.trace.goal) for s in steps]  # type: ignore[union-attr]
    per = (rec.D_T / len(steps)) if (rec.D_T is not None and steps) else None
    return [per if per is not None else float("nan")] * len(steps)


class SyntheticLearner:
    """Competence and familiarity over a fixed vocabulary; success probabilities and GRPO updates."""

    def __init__(self, records: Sequence[EnvRecord], config: LearnerConfig | None = None, seed: int = 0) -> None:
        self.config = config or LearnerConfig()
        # index 0: the stand-in step of an environment recorded without ξ
        self.skill_index: dict[str, int] = {"": 0}
        self.scenario_index: dict[str, int] = {"": 0}
        for r in records:
            for s in r.trace.steps if r.trace else ():
                self.skill_index.setdefault(s.skill, len(self.skill_index))
                self.scenario_index.setdefault(s.scenario, len(self.scenario_index))
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x1EA2]))
        self.competence = rng.normal(0.0, self.config.init_noise, len(self.skill_index))
        self.familiarity = rng.normal(0.0, self.config.init_noise, len(self.scenario_index))

    def compile(self, records: Sequence[EnvRecord]) -> CompiledEnvs:
        """Arrays for ``records`` (every skill and scenario must be in the vocabulary given at construction).
        An environment without ξ becomes a single step at the reference rarity."""
        lmax = max([1] + [r.trace.L for r in records if r.trace])
        n = len(records)
        k = np.zeros((n, lmax), dtype=np.int64)
        s = np.zeros((n, lmax), dtype=np.int64)
        rar = np.full((n, lmax), self.config.rarity_ref, dtype=np.float64)
        mask = np.zeros((n, lmax), dtype=np.bool_)
        for i, r in enumerate(records):
            steps = r.trace.steps if r.trace else ()
            if not steps:
                mask[i, 0] = True
                continue
            costs = _pair_costs(r)
            for t, st in enumerate(steps):
                k[i, t] = self.skill_index[st.skill]
                s[i, t] = self.scenario_index[st.scenario]
                if costs[t] == costs[t]:  # not NaN
                    rar[i, t] = costs[t]
                mask[i, t] = True
        return CompiledEnvs(k, s, rar, mask)

    def _logits(self, envs: CompiledEnvs, rows: np.ndarray) -> np.ndarray:
        c = self.config
        logits: np.ndarray = (c.base + self.competence[envs.skills[rows]] + self.familiarity[envs.scenarios[rows]]
                              - c.rarity_weight * (envs.rarity[rows] - c.rarity_ref))
        return logits

    def success(self, envs: CompiledEnvs, rows: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        """True success probability of each environment (rows of ``envs``; default all)."""
        rows = np.arange(len(envs)) if rows is None else np.asarray(rows, dtype=np.int64)
        step = 1.0 / (1.0 + np.exp(-self._logits(envs, rows)))
        p: np.ndarray = np.where(envs.mask[rows], step, 1.0).prod(axis=1)
        return p

    def update(self, envs: CompiledEnvs, rows: Sequence[int], rewards: Sequence[Sequence[float]],
               batch_size: int) -> int:
        """One GRPO step on the groups (``rows[j]`` rolled out with ``rewards[j]``); the step is averaged
        over ``batch_size`` slots. Returns how many groups carried any signal."""
        weights, used = [], []
        for row, group_rewards in zip(rows, rewards, strict=False):
            r = np.asarray(group_rewards, dtype=np.float64)
            adv = r - r.mean()
            if not np.any(adv):
                continue  # all equal: zero advantage, nothing to learn
            if self.config.normalize_std:
                adv = adv / (r.std() + 1e-6)
            weights.append(float(np.abs(adv).mean()))
            used.append(int(row))
        if not used:
            return 0
        idx = np.asarray(used, dtype=np.int64)
        step = 1.0 / (1.0 + np.exp(-self._logits(envs, idx)))
        g = (1.0 - step) * envs.mask[idx] * (np.asarray(weights)[:, None] / max(batch_size, 1))
        np.add.at(self.competence, envs.skills[idx], self.config.lr_skill * g)
        np.add.at(self.familiarity, envs.scenarios[idx], self.config.lr_scenario * g)
        return len(used)
