"""ξ, the scenario–skill trajectory of solving an environment.

ξ = (σ0, κ1, σ1, …, κL, σL) is stored as its L pairs (σ_{t−1}, κ_t): the pairs are what D_T sums over and
what the three evolution directions edit. The final scenario σL (where the checked artifact lands) is kept
separately because no term of D_T depends on it.

These value types need nothing but pydantic, so trace sits below the catalog: the catalog builds ξ (a chain is a
typed ξ) and its prior is one p_T among others, and both import them from here.
"""

from __future__ import annotations

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
