"""D_T, the model-free difficulty of a trajectory under a reference distribution p_T.

    D_T(ξ) = Σ_{t=1..L} [ −log p_T(σ_{t−1} | g) − log p_T(κ_t | σ_{t−1}, g) ]

The two sums are reported separately (scenario novelty, skill rarity) because evolution moves them
through different directions, and reports break D_T down by lever.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from envevo.trace._model import Trace


@runtime_checkable
class ReferenceDistribution(Protocol):
    """p_T: how expected a scenario is for a goal, and a skill in a scenario for a goal (natural log)."""

    name: str

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float: ...

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float: ...


class Difficulty(BaseModel):
    L: int
    scenario_novelty: float
    skill_rarity: float
    D_T: float
    estimator: str


def difficulty(trace: Trace, p: ReferenceDistribution) -> Difficulty:
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
