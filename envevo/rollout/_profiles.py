"""Skill profiles of simulated agents: how likely a profile solves one (scenario, skill) step.

SIMULATION: these profiles stand in for models; numbers they produce are simulated, and say so.

A step's success probability is competence × familiarity, both derived from p_T (the catalog prior):

    competence(κ)  = exp(−[−log p_T(κ | σ, g)] / skill_scale)
    familiarity(σ) = exp(−[−log p_T(σ | g)] / scenario_scale)

so rarer skills and more novel scenarios are harder, and a larger scale means a stronger profile.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field


class SimProfile(BaseModel):
    name: str
    skill_scale: float = Field(gt=0, description="nats of skill rarity per e-fold drop in competence")
    scenario_scale: float = Field(gt=0, description="nats of scenario novelty per e-fold drop in familiarity")
    notice: float = Field(ge=0, le=1, description="chance to notice a wrong result that passed the self-check")
    retries: int = Field(ge=0, description="extra attempts per step after a failed self-check or a noticed error")
    explore: float = Field(ge=0, description="read-only look-around commands per nat of the step's surprisal")
    p_step: float | None = Field(default=None, ge=0, le=1, description="fixed per-step success chance (tests)")


PROFILES: dict[str, SimProfile] = {
    p.name: p
    for p in (
        SimProfile(name="sim-strong", skill_scale=40, scenario_scale=60, notice=0.6, retries=2, explore=0.5),
        SimProfile(name="sim-medium", skill_scale=20, scenario_scale=30, notice=0.4, retries=1, explore=0.8),
        SimProfile(name="sim-weak", skill_scale=10, scenario_scale=15, notice=0.2, retries=1, explore=1.2),
    )
}


def is_simulated(agent: str) -> bool:
    return agent in PROFILES or agent.startswith("sim-")


def profile(name_or_data: str | dict | SimProfile) -> SimProfile:
    if isinstance(name_or_data, SimProfile):
        return name_or_data
    if isinstance(name_or_data, dict):
        return SimProfile.model_validate(name_or_data)
    try:
        return PROFILES[name_or_data]
    except KeyError:
        raise ValueError(f"unknown simulated profile {name_or_data!r}; choose one of {sorted(PROFILES)}") from None


def step_probability(prof: SimProfile, prior, scenario: str, skill: str, goal: str) -> float:
    """P(the profile applies `skill` correctly in `scenario`) under reference distribution `prior`."""
    if prof.p_step is not None:
        return prof.p_step
    competence = math.exp(-prior.neg_log_p_skill(skill, scenario, goal) / prof.skill_scale)
    familiarity = math.exp(-prior.neg_log_p_scenario(scenario, goal) / prof.scenario_scale)
    return competence * familiarity


def explore_turns(prof: SimProfile, prior, scenario: str, skill: str, goal: str) -> int:
    """Look-around commands before acting: more for surprising steps, at least one."""
    cost = prior.neg_log_p_scenario(scenario, goal) + prior.neg_log_p_skill(skill, scenario, goal)
    return max(1, round(prof.explore * cost))
