"""The exact expected pass rate and turns of a simulated agent on a procedural task. SIMULATION.

A simulated episode (`_episode.play`) is a known stochastic process. Per step t, with per-attempt success p_t
(`step_probability`), notice chance n, R retries and ℓ_t look-around turns:

- an attempt is right with chance p_t; a right attempt passes its self-check and ends the step;
- a wrong attempt is retried when its self-check fails (the step's *caught* fact) or, if the check passes, when
  the agent notices it (chance n); so after an attempt another follows with chance r_t = (1 − p_t)·(1 if caught
  else n), at most R times;
- every retry starts from the state the step began in (the agent's undo), so the step ends right exactly when its
  last attempt was right: P(right_t) = p_t·(1 + r_t + … + r_t^R), and E[attempts_t] = 1 + r_t + … + r_t^R.

Each step's tests check its own output, so the task passes only if every step ends right: the steps draw
independently, and the pass rate is Π_t P(right_t). Turns are Σ_t ℓ_t + 3·E[attempts_t] (backup or undo, action,
self-check per attempt).

The one fact not known on the host is whether a step's wrong variant fails the agent's self-check (exits non-zero
or leaves its output empty). It is a fixed property of the version, observed by every episode that tried the wrong
variant with the steps before it right (`caught_facts`); a step never observed counts as not caught, which is the
common case (a plausible wrong answer). Expected turns also assume that a step after a wrong one behaves as it
would after a right one; the pass rate needs no such assumption.

A second fact of the same kind: a wrong variant can be *harmless*, giving the right output on this version's data,
so the step ends right whatever the attempts (P(right_t) = 1). It is seen in an episode that passed with that step's
last attempt wrong (`harmless_facts`). Such a step's checks do not tell the plausible mistake from the skill, which
is worth knowing about the task too: `harmless_facts` names them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from math import comb

from pydantic import BaseModel, Field

from envevo.rollout._episode import TURNS_PER_ATTEMPT, Episode
from envevo.rollout._profiles import SimProfile, explore_turns, step_probability
from envevo.runtime import ORACLE_AGENT


class StepExpectation(BaseModel):
    index: int
    scenario: str
    skill: str
    p: float = Field(description="chance that one attempt is right")
    caught: bool = Field(description="the wrong variant fails the self-check (observed), so it is always retried")
    p_right: float = Field(description="chance that the step ends right")
    attempts: float = Field(description="expected attempts")
    look: int = Field(description="look-around turns")


class Expectation(BaseModel):
    simulated: bool = True
    profile: str
    pass_rate: float
    turns: float
    steps: list[StepExpectation]


def step_outcome(p: float, notice: float, retries: int, caught: bool = False, harmless: bool = False) -> tuple[float, float]:
    """(P(the step ends right), E[attempts]) for one step."""
    r = (1 - p) * (1.0 if caught else notice)
    attempts = sum(r ** j for j in range(retries + 1))
    return (1.0 if harmless else p * attempts), attempts


def expected(chain, prof: SimProfile, prior, caught: Mapping[int, bool] | None = None,
             harmless: Collection[int] = ()) -> Expectation:
    """The exact expectation of profile `prof` on `chain` (a catalog Chain) under `prior` (its p_T), given the
    version's facts: which steps' wrong variants fail the self-check (`caught`), and which pass the checks anyway."""
    caught = caught or {}
    steps, rate, turns = [], 1.0, 0.0
    for i, s in enumerate(chain.steps):
        p = step_probability(prof, prior, s.scenario, s.skill, chain.goal)
        p_right, attempts = step_outcome(p, prof.notice, prof.retries, caught.get(i, False), i in harmless)
        look = explore_turns(prof, prior, s.scenario, s.skill, chain.goal)
        steps.append(StepExpectation(index=i, scenario=s.scenario, skill=s.skill, p=p, caught=caught.get(i, False),
                                     p_right=p_right, attempts=attempts, look=look))
        rate *= p_right
        turns += look + TURNS_PER_ATTEMPT * attempts
    return Expectation(profile=prof.name, pass_rate=rate, turns=turns, steps=steps)


def caught_facts(episodes: Iterable[Episode]) -> dict[int, bool]:
    """Per step index, whether its wrong variant failed the self-check, from episodes that tried it with every
    earlier step right (the state the fact is about). Facts of one version hold for every profile."""
    facts: dict[int, bool] = {}
    for ep in episodes:
        for t, step in enumerate(ep.steps):
            for attempt, ok in zip(step.attempts, step.self_check, strict=False):
                if attempt == "wrong":
                    facts[t] = facts.get(t, False) or not ok
            if not step.attempts or step.attempts[-1] != ORACLE_AGENT:
                break  # later steps ran on a wrong input
    return facts


def harmless_facts(episodes: Iterable[Episode]) -> set[int]:
    """Step indices whose wrong variant passed the checks: an episode passed with that step's last attempt wrong."""
    return {t for ep in episodes if ep.passed for t, step in enumerate(ep.steps)
            if step.attempts and step.attempts[-1] == "wrong"}


def binomial_interval(p: float, k: int, level: float = 0.95) -> tuple[int, int]:
    """The central interval [lo, hi] of pass counts out of k that holds at least `level` of Binomial(k, p)."""
    tail = (1 - level) / 2
    pmf = [comb(k, x) * p ** x * (1 - p) ** (k - x) for x in range(k + 1)]
    lo, below = 0, 0.0
    while lo < k and below + pmf[lo] <= tail:
        below += pmf[lo]
        lo += 1
    hi, above = k, 0.0
    while hi > 0 and above + pmf[hi] <= tail:
        above += pmf[hi]
        hi -= 1
    return lo, hi


def task_expectation(task, agent: str, caught: Mapping[int, bool] | None = None,
                     harmless: Collection[int] = ()) -> Expectation | None:
    """The expectation of simulated profile `agent` on a procedural Task; None for a real agent or another task."""
    from envevo.catalog import CatalogPrior, chain_from_task
    from envevo.errors import TaskError
    from envevo.rollout._profiles import PROFILES

    if agent not in PROFILES:
        return None
    try:
        chain = chain_from_task(task)
    except TaskError:
        return None
    return expected(chain, PROFILES[agent], CatalogPrior(), caught, harmless)


def read_episodes(trial_dirs: Iterable) -> list[Episode]:
    """The simulated episodes logged in trial dirs (agent/simulation.json), each with whether the trial passed
    (verifier/reward.txt, None when unreadable); dirs without an episode are skipped."""
    from pathlib import Path

    out = []
    for d in trial_dirs:
        f = Path(d) / "agent" / "simulation.json" if d else None
        if f is not None and f.is_file():
            ep = Episode.model_validate_json(f.read_text())
            try:
                ep.passed = float((Path(d) / "verifier" / "reward.txt").read_text().strip()) >= 1.0
            except (OSError, ValueError):
                ep.passed = None
            out.append(ep)
    return out
