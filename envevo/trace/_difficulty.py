"""D_T, the model-free difficulty of a trajectory under a reference distribution p_T.

    D_T(ξ) = Σ_{t=1..L} [ −log p_T(σ_{t−1} | g) − log p_T(κ_t | σ_{t−1}, g) ]

The two sums are reported separately (scenario novelty, skill rarity) because evolution moves them
through different directions, and reports break D_T down by lever.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

# D_T's value type and function are defined with ξ in envevo.catalog (the catalog prior computes D_T too).
from envevo.catalog import Difficulty, difficulty

__all__ = ["Difficulty", "ReferenceDistribution", "difficulty"]


@runtime_checkable
class ReferenceDistribution(Protocol):
    """p_T: how expected a scenario is for a goal, and a skill in a scenario for a goal (natural log)."""

    name: str

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float: ...

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float: ...
