"""Model weakness: d_θ per step estimated from a model's failed rollouts, and δ_θ = [d_θ − d_T]_+ per skill and scenario.

docs/weakness.md: the method defines a model's own difficulty d_θ like D_T, with p_θ in place of p_T, and its weakness
δ_θ = [d_θ − d_T]_+. This module measures both from rollouts that were already run; it runs nothing.

Per-step outcomes (agent-agnostic: nothing the agent logs is read)
-------------------------------------------------------------------
A procedural task's verifier prints one line per check, in chain order (Harbor keeps it as
`<trial dir>/verifier/test-stdout.txt`)::

    PASS <check> <path>
    FAIL <check> <path> - <error>

Every check belongs to the block (chain step) that generated it: the step's output file at its
`out_path` (the last step's under /app/output) plus any file the step must change (modes, edited
configs). A step *succeeded* if all its checks passed and *failed* if any failed. Because each step
reads the previous step's output, a failure cascades downstream, so a rollout's failure is attributed to
the FIRST failed step in chain order: the steps before it succeeded, the steps after it are censored
(unknown: they may have been right on a wrong input, or wrong anyway). A step with a check missing from
the output (a truncated verifier log) is censored from there on.

Without verifier output (or for a task whose checks cannot be mapped to steps: not procedural), a passed
rollout means every step succeeded, and a failed rollout carries no per-step information: it is skipped
and counted as *unattributed*. Rollouts count as pass rates count them (`summarize`): infrastructure
failures not at all; an agent error or timeout like any failure, so the step the agent had not finished
when it stopped takes the blame (the report lists these error kinds, to tell them from wrong answers).
A simulated agent's `agent/simulation.json` is the simulation's ground truth; the tests use it to check
this estimator, which never reads it.

Estimation
----------
Over all rollouts of one (agent, model) on the run's versions, for every (scenario, skill) pair, every
skill and every scenario: n = step occurrences reached (succeeded or failed first), f = failed first.
The pooled step success is s̄ = (N − F + ½)/(N + 1) over all reached occurrences (Jeffreys prior), and a
unit's success is the posterior mean under a Beta(m·s̄, m·(1 − s̄)) prior, m = 2 pseudo-observations:

    ŝ = (n − f + m·s̄) / (n + m)

Centring the prior on s̄ (not on ½, as Laplace's Beta(1, 1) would) means a step seen rarely or never
shows no weakness (ŝ → s̄, δ → 0) instead of a spurious one, and two lucky rollouts cannot make one.

d_θ, comparable to d_T
----------------------
Let s(x) be the model's chance to get step x right once it reaches it. Take p_θ to be p_T conditioned on
the model succeeding, by Bayes:

    p_θ(x) = p_T(x | θ succeeds) = p_T(x) · s(x) / E_{p_T}[s]

so p_θ is a distribution over the same support as p_T, measured in the same nats, and equals p_T for a
model whose competence is uniform (its failures say nothing about *which* steps it finds hard).
E_{p_T}[s] is estimated by s̄, the mean over the steps the rollouts actually met (an approximation: they
are the run's steps, not draws from p_T). Hence, per step,

    d_θ,t = d_T,t + log(s̄ / ŝ_t)        δ_θ,t = [d_θ,t − d_T,t]_+ = [log(s̄ / ŝ_t)]_+

δ is the extra nats the model pays on that step beyond its average: a step it fails twice as often as
its average step costs log 2 ≈ 0.69 extra nats. The tilt applies factor by factor, matching D_T's two
terms: the scenario table tilts −log p_T(σ|g) by the scenario's ŝ, the skill table −log p_T(κ|σ,g) by
the skill's ŝ, and the pair table the pair's cost −log p_T(σ|g) − log p_T(κ|σ,g) by the pair's ŝ. Each
row's d_T is the mean term over the occurrences reached (over all occurrences when none was).

The alternative d_θ = d_T − log ŝ (the surprisal of success) is not a distribution's nats: it is ≥ d_T
for every step, so δ would mostly measure the model's overall failure rate, which pass rates already
report; the normalized tilt isolates *where* the model is weak relative to the reference.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from envevo.errors import UserError

VERIFIER_STDOUT = "verifier/test-stdout.txt"  # where Harbor keeps the verifier's stdout, under the trial dir
PRIOR_STRENGTH = 2.0  # m: pseudo-observations of the Beta prior centred on s̄
PRIOR = f"Beta(m·s̄, m·(1−s̄)), m={PRIOR_STRENGTH:g}; s̄ with Jeffreys Beta(½, ½)"


class StepOutcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"  # the rollout's first failed step
    CENSORED = "censored"  # not reached, or unknown


Check = tuple[str, str]  # (check kind, path), as the verifier prints them


def parse_verifier(stdout: str, checks: Sequence[Sequence[Check]]) -> list[bool | None]:
    """Per flat check (blocks' checks in chain order): True passed, False failed, None missing from the output.

    The verifier prints its checks in order, one line each; lines are matched to checks in that order, and
    the first line that does not belong to the expected check ends the match (the rest is unknown).
    """
    flat = [c for block in checks for c in block]
    lines = [ln for ln in stdout.splitlines() if ln.startswith(("PASS ", "FAIL "))]
    status: list[bool | None] = [None] * len(flat)
    for i, (line, (kind, path)) in enumerate(zip(lines, flat, strict=False)):
        key = f"{kind} {path}"
        if line == f"PASS {key}":
            status[i] = True
        elif line == f"FAIL {key}" or line.startswith(f"FAIL {key} - "):
            status[i] = False
        else:
            break
    return status


@dataclass(frozen=True)
class RolloutSteps:
    """What one rollout says about each step of its chain."""

    outcomes: tuple[StepOutcome, ...] | None  # None: nothing per step (unattributed)
    source: str  # "verifier" | "reward" | "none"
    attributed: bool  # a failed rollout whose failure was pinned on a step (passed rollouts: True)


def step_outcomes(checks: Sequence[Sequence[Check]] | None, L: int, passed: bool, stdout: str | None) -> RolloutSteps:
    """Per-step outcomes of one rollout from the verifier's per-check lines (first failure; later steps censored).

    `checks` holds each step's (kind, path) checks in chain order, or None when the task's checks cannot be
    mapped to steps; `stdout` is the verifier's output, or None when it is missing.
    """
    status = parse_verifier(stdout, checks) if (checks is not None and stdout) else []
    if checks is not None and any(s is not None for s in status):
        outcomes: list[StepOutcome] = []
        i, stop = 0, False
        for block in checks:
            mine = status[i:i + len(block)]
            i += len(block)
            if stop:
                outcomes.append(StepOutcome.CENSORED)
            elif False in mine:
                outcomes.append(StepOutcome.FAILURE)
                stop = True
            elif None in mine or not mine:
                outcomes.append(StepOutcome.CENSORED)
                stop = True
            else:
                outcomes.append(StepOutcome.SUCCESS)
        failed_at = StepOutcome.FAILURE in outcomes
        return RolloutSteps(tuple(outcomes), "verifier", attributed=failed_at or passed)
    if passed:
        return RolloutSteps(tuple([StepOutcome.SUCCESS] * L), "reward", attributed=True)
    return RolloutSteps(None, "none", attributed=False)


def read_verifier_stdout(trial_dir: str | Path | None) -> str | None:
    if not trial_dir:
        return None
    path = Path(trial_dir) / VERIFIER_STDOUT
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


class StepObservation(BaseModel):
    """One step of one rollout: where, what, its two D_T terms (nats) and what happened."""

    scenario: str
    skill: str
    novelty: float = Field(description="−log p_T(σ | g)")
    rarity: float = Field(description="−log p_T(κ | σ, g)")
    outcome: StepOutcome


class WeaknessRow(BaseModel):
    scenario: str | None = None
    skill: str | None = None
    n: int = Field(description="occurrences reached: the step succeeded or was the rollout's first failure")
    failures: int = Field(description="rollouts whose first failed step this was")
    censored: int = Field(description="occurrences after an earlier failure (not counted in n)")
    s_hat: float = Field(description="ŝ: posterior mean step success")
    d_T: float = Field(description="mean d_T term of the row (nats): novelty, rarity, or both for a pair")
    d_theta: float = Field(description="d_θ = d_T + log(s̄/ŝ)")
    delta: float = Field(description="δ_θ = [d_θ − d_T]_+ = [log(s̄/ŝ)]_+")


class WeaknessReport(BaseModel):
    agent: str
    model: str | None = None
    simulated: bool
    estimator: str = Field(description="p_T the d_T terms come from")
    prior: str = PRIOR
    versions: int = Field(description="run versions with counted rollouts of this agent")
    rollouts: int = Field(description="counted rollouts (infrastructure failures excluded)")
    passed: int
    attributed: int = Field(description="failed rollouts whose failure was pinned on a step")
    unattributed: int = Field(description="failed rollouts with no per-step information (skipped)")
    from_verifier: int = Field(description="rollouts whose per-step outcomes came from the verifier's check lines")
    errors: dict[str, int] = Field(default_factory=dict, description="error kind -> count, for counted rollouts not ok")
    observations: int = Field(description="step occurrences reached, over all rollouts")
    s_bar: float = Field(description="s̄: pooled step success")
    skills: list[WeaknessRow] = Field(default_factory=list)
    scenarios: list[WeaknessRow] = Field(default_factory=list)
    pairs: list[WeaknessRow] = Field(default_factory=list)


def pooled_success(obs: Iterable[StepObservation]) -> float:
    reached = [o for o in obs if o.outcome is not StepOutcome.CENSORED]
    ok = sum(o.outcome is StepOutcome.SUCCESS for o in reached)
    return (ok + 0.5) / (len(reached) + 1.0)


def posterior_success(n: int, f: int, s_bar: float, m: float = PRIOR_STRENGTH) -> float:
    return (n - f + m * s_bar) / (n + m)


def _rows(obs: Sequence[StepObservation], key, term, s_bar: float, m: float) -> list[WeaknessRow]:
    groups: dict[tuple, list[StepObservation]] = {}
    for o in obs:
        groups.setdefault(key(o), []).append(o)
    rows = []
    for k, items in groups.items():
        reached = [o for o in items if o.outcome is not StepOutcome.CENSORED]
        n, f = len(reached), sum(o.outcome is StepOutcome.FAILURE for o in reached)
        s_hat = posterior_success(n, f, s_bar, m)
        terms = [term(o) for o in (reached or items)]
        d_t = sum(terms) / len(terms)
        extra = math.log(s_bar / s_hat)
        rows.append(WeaknessRow(scenario=k[0], skill=k[1], n=n, failures=f, censored=len(items) - n,
                                s_hat=round(s_hat, 6), d_T=round(d_t, 6), d_theta=round(d_t + extra, 6),
                                delta=round(max(0.0, extra), 6)))
    return sorted(rows, key=lambda r: (-r.delta, r.s_hat, -r.n, r.scenario or "", r.skill or ""))


def estimate(obs: Sequence[StepObservation],
             m: float = PRIOR_STRENGTH) -> tuple[float, list[WeaknessRow], list[WeaknessRow], list[WeaknessRow]]:
    """(s̄, per-skill rows, per-scenario rows, per-pair rows), each sorted by δ_θ descending."""
    s_bar = pooled_success(obs)
    skills = _rows(obs, lambda o: (None, o.skill), lambda o: o.rarity, s_bar, m)
    scenarios = _rows(obs, lambda o: (o.scenario, None), lambda o: o.novelty, s_bar, m)
    pairs = _rows(obs, lambda o: (o.scenario, o.skill), lambda o: o.novelty + o.rarity, s_bar, m)
    return s_bar, skills, scenarios, pairs


def observations(trace, steps: RolloutSteps, p) -> list[StepObservation]:
    """The step observations of one rollout on a task with ξ `trace`, d_T terms under p_T `p`."""
    if steps.outcomes is None:
        return []
    return [StepObservation(scenario=s.scenario, skill=s.skill, novelty=p.neg_log_p_scenario(s.scenario, trace.goal),
                            rarity=p.neg_log_p_skill(s.skill, s.scenario, trace.goal), outcome=out)
            for s, out in zip(trace.steps, steps.outcomes, strict=False)]


# ---- a run store ------------------------------------------------------------------------------------

def choose_agent(store, agent: str | None = None, model: str | None = None) -> tuple[str, str | None]:
    """The one (agent, model) whose rollouts of the run's versions to read; a one-line error otherwise."""
    hashes = {v.task_hash for lin in store.lineages() for v in store.versions(lin.id)}
    pairs = sorted({(r.agent, r.model) for r in store.rollouts() if r.task_hash in hashes
                    and (agent is None or r.agent == agent) and (model is None or r.model == model)},
                   key=lambda am: (am[0], am[1] or ""))
    run = store.run_dir
    if not pairs:
        who = " by " + "/".join(x for x in (agent or "*", model) if x) if (agent or model) else ""
        raise UserError(f"{run} has no rollouts of its versions{who}; run `envevo rollout {run} --agent sim-weak` first")
    if len(pairs) > 1:
        names = ", ".join(f"{a}/{m or '-'}" for a, m in pairs)
        flag = "--by-model" if len({a for a, _ in pairs}) == 1 else "--by-agent (and --by-model)"
        raise UserError(f"{run} holds rollouts of several agents ({names}); pick one with {flag}")
    return pairs[0]


def _version_checks(store, task_hash: str):
    """(ξ, per-step checks or None) of a stored version."""
    from envevo.trace import trace_of_task

    task = store.load_version_task(task_hash)
    meta = task.envevo_metadata or {}
    if meta.get("engine") == "procedural" and isinstance(meta.get("chain"), dict):
        from envevo.catalog import build_blocks, chain_from_task

        chain = chain_from_task(task)
        blocks = build_blocks(chain)
        return chain.trace(), [[(c["check"], c["path"]) for c in b.checks] for b in blocks]
    return trace_of_task(task), None


def weakness(store, agent: str | None = None, model: str | None = None, p=None) -> WeaknessReport:
    """δ_θ per skill, scenario and pair for one (agent, model) over every version of a run."""
    if p is None:
        from envevo.trace import estimator

        p = estimator()
    agent, model = choose_agent(store, agent, model)
    versions = {v.task_hash: v for lin in store.lineages() for v in store.versions(lin.id)}
    obs: list[StepObservation] = []
    counts = {"rollouts": 0, "passed": 0, "attributed": 0, "unattributed": 0, "from_verifier": 0}
    errors: dict[str, int] = {}
    used, simulated = set(), False
    for task_hash, v in versions.items():
        rows = [r for r in store.rollouts(task_hash, agent=agent, model=model or "")
                if str(r.error_kind or "ok") != "infrastructure_error"]
        if not rows:
            continue
        try:
            trace, checks = _version_checks(store, task_hash)
        except UserError:
            trace, checks = v.trace, None
        used.add(task_hash)
        for r in rows:
            simulated |= r.simulated
            counts["rollouts"] += 1
            counts["passed"] += r.passed
            if str(r.error_kind or "ok") != "ok":
                errors[str(r.error_kind)] = errors.get(str(r.error_kind), 0) + 1
            if trace is None:
                counts["unattributed"] += not r.passed
                continue
            steps = step_outcomes(checks, trace.L, r.passed, read_verifier_stdout(r.trial_dir))
            counts["from_verifier"] += steps.source == "verifier"
            if not r.passed:
                counts["attributed" if steps.attributed else "unattributed"] += 1
            obs += observations(trace, steps, p)
    s_bar, skills, scenarios, pairs = estimate(obs)
    return WeaknessReport(agent=agent, model=model, simulated=simulated, estimator=p.name, versions=len(used),
                          observations=sum(o.outcome is not StepOutcome.CENSORED for o in obs), s_bar=round(s_bar, 6),
                          errors=errors, skills=skills, scenarios=scenarios, pairs=pairs, **counts)
