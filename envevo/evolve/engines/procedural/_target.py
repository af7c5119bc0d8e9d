"""Weakness targeting: among the admissible edits, prefer those that raise one agent's weakness δ_θ.

A WeaknessTarget holds an agent's δ_θ = [d_θ − d_T]_+ per skill and per scenario, as `envevo difficulty RUN
--weakness` estimates them from its rollouts (envevo/rollout/_weakness.py; this floor cannot read rollouts, so the
caller passes the numbers). A step's weakness is the sum of its two factors, matching D_T's two terms:
δ(σ, κ) = δ_scenario(σ) + δ_skill(κ); a skill or scenario the rollouts never reached counts 0 (no evidence of a
weakness). The targeted policy keeps only the edits that raise Σδ over the chain (when any does) and weights them
by the square of their gain in d_θ = D_T + Σδ, where the untargeted policy weights by the square of the D_T gain.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class WeaknessTarget(BaseModel):
    agent: str
    model: str | None = None
    skills: dict[str, float] = Field(default_factory=dict, description="skill -> δ_θ (nats)")
    scenarios: dict[str, float] = Field(default_factory=dict, description="scenario -> δ_θ (nats)")
    source: str = Field(default="", description="where the δ came from (the run whose rollouts were read)")

    def step(self, scenario: str, skill: str) -> float:
        return self.scenarios.get(scenario, 0.0) + self.skills.get(skill, 0.0)

    def total(self, pairs: list[tuple[str, str]]) -> float:
        """Σ δ_θ over the steps of a chain."""
        return sum(self.step(a, b) for a, b in pairs)

    def weakest(self, n: int = 3) -> list[tuple[str, float]]:
        """The largest δ, skills and scenarios together, for messages."""
        rows = [(f"skill {k}", v) for k, v in self.skills.items()] + [(f"scenario {k}", v) for k, v in self.scenarios.items()]
        return sorted((r for r in rows if r[1] > 0), key=lambda r: -r[1])[:n]
