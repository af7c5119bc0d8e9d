"""ξ, the scenario–skill trajectory of solving an environment, and D_T over it.

ξ = (σ0, κ1, σ1, …, κL, σL) is stored as its L pairs (σ_{t−1}, κ_t): the pairs are what D_T sums over and
what the three evolution directions edit. The final scenario σL (where the checked artifact lands) is kept
separately because no term of D_T depends on it.

    D_T(ξ) = Σ_{t=1..L} [ −log p_T(σ_{t−1} | g) − log p_T(κ_t | σ_{t−1}, g) ]

These value types sit on the catalog's floor, below envevo.trace, because a chain is a typed ξ and the catalog
prior is a p_T: the catalog builds both. envevo.trace re-exports them and holds everything else about ξ
(the estimator protocol and registry, edits, drift, the corpus and LLM estimators).
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field


class Step(BaseModel):
    """One pair of ξ: in scenario σ (where the agent is) apply skill κ (what it does there)."""

    model_config = ConfigDict(frozen=True)

    scenario: str
    skill: str


class Trace(BaseModel):
    model_config = ConfigDict(frozen=True)

    goal: str = Field(description="g, the goal the trajectory achieves")
    steps: tuple[Step, ...] = ()
    final: str | None = Field(default=None, description="σL, where the checked artifact ends up")

    @property
    def L(self) -> int:  # noqa: N802 - the paper's name
        return len(self.steps)

    def pretty(self) -> str:
        parts = [f"[{s.scenario}] -{s.skill}->" for s in self.steps]
        return " ".join(parts + [f"[{self.final}]" if self.final else "·"])


class Difficulty(BaseModel):
    L: int
    scenario_novelty: float
    skill_rarity: float
    D_T: float
    estimator: str


class _NegLogP(Protocol):
    name: str

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float: ...

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float: ...


def difficulty(trace: Trace, p: _NegLogP) -> Difficulty:
    """D_T of ξ under p_T, with its two levers (scenario novelty, skill rarity) reported separately."""
    novelty = sum(p.neg_log_p_scenario(s.scenario, trace.goal) for s in trace.steps)
    rarity = sum(p.neg_log_p_skill(s.skill, s.scenario, trace.goal) for s in trace.steps)
    return Difficulty(
        L=trace.L,
        scenario_novelty=round(novelty, 6),
        skill_rarity=round(rarity, 6),
        D_T=round(novelty + rarity, 6),
        estimator=p.name,
    )
