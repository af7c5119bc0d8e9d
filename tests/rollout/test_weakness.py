"""Model weakness (`envevo difficulty RUN --weakness`): per-step outcomes from the verifier's check lines, d_θ and δ_θ.

No sandbox: trial dirs are fake (only `verifier/test-stdout.txt`, written the way the generated verifier
prints it), and simulated episodes run with a fake exec that records commands and returns rc 0.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.catalog import CatalogPrior, build_blocks, random_chain
from envevo.cli.difficulty_cmd import difficulty
from envevo.evolve.engines.procedural import compose, mutate
from envevo.rollout import PROFILES, SimProfile, play, step_outcomes, weakness
from envevo.rollout._weakness import (
    VERIFIER_STDOUT,
    StepOutcome,
    estimate,
    observations,
    parse_verifier,
    posterior_success,
)
from envevo.store import LineageStore, NewRollout
from envevo.trace import Direction, Effort

app = typer.Typer()
app.command()(difficulty)

S, F, C = StepOutcome.SUCCESS, StepOutcome.FAILURE, StepOutcome.CENSORED


def checks_of(blocks) -> list[list[tuple[str, str]]]:
    return [[(c["check"], c["path"]) for c in b.checks] for b in blocks]


def verifier_stdout(checks, fail_at: int | None, rng: random.Random | None = None, truncate: int | None = None) -> str:
    """What tests/test_outputs.py prints when the first wrong step is `fail_at`: earlier steps pass, that step's
    output check fails, later steps fail (or, with `rng`, pass or fail at random: a right step on a wrong input
    may still match)."""
    lines = []
    for t, block in enumerate(checks):
        for j, (kind, path) in enumerate(block):
            if fail_at is None or t < fail_at:
                ok = True
            elif t == fail_at:
                ok = j < len(block) - 1  # the step's output check (its last) fails
            else:
                ok = rng is not None and rng.random() < 0.5
            lines.append(f"PASS {kind} {path}" if ok else f"FAIL {kind} {path} - AssertionError expected ['a'], got []")
    if truncate is not None:
        lines = lines[:truncate]
    n = sum(len(b) for b in checks)
    lines.append(f"{sum(ln.startswith('PASS') for ln in lines)} of {n} checks passed")
    return "\n".join(lines) + "\n"


CHECKS = [[("lines", "/app/work/step1.tsv")],
          [("mode", "/app/systemd/a.service"), ("mode", "/app/systemd"), ("lines", "/app/work/step2.txt")],
          [("records", "/app/work/step3.jsonl")],
          [("text", "/app/config/app.env"), ("lines", "/app/output/result.txt")]]


# ---- per-step outcomes ------------------------------------------------------------------------------

def test_first_failure_is_attributed_and_later_steps_are_censored() -> None:
    got = step_outcomes(CHECKS, 4, False, verifier_stdout(CHECKS, 1))
    assert got.outcomes == (S, F, C, C) and got.source == "verifier" and got.attributed
    # Downstream checks that pass after the failure (right step on a wrong input) are still censored.
    lines = verifier_stdout(CHECKS, 1).replace("FAIL records /app/work/step3.jsonl - AssertionError expected ['a'], got []",
                                               "PASS records /app/work/step3.jsonl")
    assert step_outcomes(CHECKS, 4, False, lines).outcomes == (S, F, C, C)
    # A step with any failed check failed, even when its main output passed.
    one_mode = verifier_stdout(CHECKS, None).replace("PASS mode /app/systemd\n", "FAIL mode /app/systemd - AssertionError x\n")
    assert step_outcomes(CHECKS, 4, False, one_mode).outcomes == (S, F, C, C)
    assert step_outcomes(CHECKS, 4, True, verifier_stdout(CHECKS, None)).outcomes == (S, S, S, S)


def test_truncated_or_missing_verifier_output() -> None:
    # Output cut after step 1's checks: step 2 is unknown, so everything from it is censored, and the
    # failure cannot be pinned on a step.
    cut = step_outcomes(CHECKS, 4, False, verifier_stdout(CHECKS, 2, truncate=2))
    assert cut.outcomes == (S, C, C, C) and not cut.attributed
    # No verifier output: a pass means every step succeeded; a failure says nothing per step.
    assert step_outcomes(CHECKS, 4, True, None).outcomes == (S, S, S, S)
    none = step_outcomes(CHECKS, 4, False, None)
    assert none.outcomes is None and not none.attributed and none.source == "none"
    # Not a procedural task (no per-step checks): the same fallback.
    assert step_outcomes(None, 3, False, verifier_stdout(CHECKS, 0)).outcomes is None
    # Output of another task (lines that do not match the checks in order) is not trusted.
    other = [[("lines", "/app/work/other.txt")]] + CHECKS[1:]
    assert step_outcomes(other, 4, False, verifier_stdout(CHECKS, 2)).outcomes is None
    assert parse_verifier(verifier_stdout(CHECKS, 2), other)[:2] == [None, None]


# ---- a run with synthetic rollouts ----------------------------------------------------------------------

def _run(tmp_path: Path, weak_pairs: dict[tuple[str, str], float], n: int = 6, agent: str = "sim-weak",
         model: str = "simulation", extra_agent: bool = False):
    """A procedural lineage of three generations; per version n rollouts whose first failure is a weak pair's
    step with that pair's chance (other steps never fail); fake trial dirs hold the verifier's stdout."""
    prior, rng = CatalogPrior(), random.Random(7)
    chain = random_chain(None, 3, 11)
    chains = [chain]
    for _ in (1, 2):
        chain = mutate(chain, Direction.LENGTH, Effort.HIGH, rng, prior)
        chains.append(chain)
    store = LineageStore.open(tmp_path / "run", durable=False)
    lid = store.create_lineage("seed", compose(chains[0]), trace=chains[0].trace(), verified=True)
    for g, ch in enumerate(chains[1:], start=1):
        store.commit_generation(lid, g, compose(ch), direction="length", effort="high", trace=ch.trace(), verified=True)
    draw = random.Random(3)
    for g, (v, ch) in enumerate(zip(store.versions(lid), chains, strict=True)):
        checks = checks_of(build_blocks(ch))
        for k in range(n):
            fail_at = next((t for t, s in enumerate(ch.steps) if draw.random() < weak_pairs.get((s.scenario, s.skill), 0)), None)
            trial = tmp_path / "trials" / f"{g}-{k}"
            (trial / "verifier").mkdir(parents=True)
            (trial / VERIFIER_STDOUT).write_text(verifier_stdout(checks, fail_at, draw))
            store.add_rollout(NewRollout(task_hash=v.task_hash, agent=agent, k=k, model=model, reward=float(fail_at is None),
                                         turns=20, error_kind="ok", simulated=agent.startswith("sim-"), trial_dir=trial))
        if extra_agent:
            store.add_rollout(NewRollout(task_hash=v.task_hash, agent="terminus-2", k=0, model="openai/x", reward=0.0,
                                         turns=30, error_kind="ok"))
    store.close()
    return tmp_path / "run", chains


def test_a_weaker_skill_gets_a_higher_delta_and_delta_is_never_negative(tmp_path: Path) -> None:
    probe = random_chain(None, 3, 11)
    weak = (probe.steps[1].scenario, probe.steps[1].skill)  # kept by length edits, so in every version
    run, chains = _run(tmp_path, {weak: 0.7}, n=8)
    with LineageStore.open(run, create=False) as store:
        rep = weakness(store)
    assert rep.agent == "sim-weak" and rep.simulated and rep.versions == 3 and rep.rollouts == 24
    assert rep.unattributed == 0 and rep.attributed == rep.rollouts - rep.passed > 0
    assert rep.from_verifier == 24
    assert rep.skills[0].skill == weak[1] and rep.skills[0].delta > 0.3
    assert rep.scenarios[0].scenario == weak[0] and rep.pairs[0].scenario == weak[0] and rep.pairs[0].skill == weak[1]
    for rows in (rep.skills, rep.scenarios, rep.pairs):
        assert all(r.delta >= 0 for r in rows)
        assert [r.delta for r in rows] == sorted((r.delta for r in rows), reverse=True)
        for r in rows:
            assert r.d_theta == pytest.approx(r.d_T + math.log(rep.s_bar / r.s_hat), abs=1e-5)
            assert r.delta == pytest.approx(max(0.0, r.d_theta - r.d_T), abs=1e-5)
    # The weak step never lets a rollout reach the steps after it, so those are censored, not failed.
    others = [r for r in rep.pairs if (r.scenario, r.skill) != weak]
    assert all(r.failures == 0 and r.delta == 0 for r in others)
    assert sum(r.censored for r in others) > 0
    # d_T of the skill row is the catalog's skill rarity.
    want = CatalogPrior().neg_log_p_skill(weak[1], weak[0], chains[0].goal)
    assert rep.skills[0].d_T == pytest.approx(want, abs=1e-4)


def test_unseen_and_never_failing_steps_shrink_to_no_weakness() -> None:
    assert posterior_success(0, 0, 0.8) == pytest.approx(0.8)
    assert posterior_success(2, 2, 0.8) == pytest.approx(0.4)  # two failures: (0 + 1.6) / 4
    assert posterior_success(100, 50, 0.8) == pytest.approx((50 + 1.6) / 102)


def test_cli_json_and_table(tmp_path: Path) -> None:
    probe = random_chain(None, 3, 11)
    run, _ = _run(tmp_path, {(probe.steps[0].scenario, probe.steps[0].skill): 0.5})
    res = CliRunner().invoke(app, [str(run), "--weakness", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["kind"] == "weakness" and data["agent"] == "sim-weak" and data["simulated"] is True
    assert data["estimator"] == "procedural-catalog-v1" and data["rollouts"] == 18
    assert {"skill", "n", "failures", "censored", "s_hat", "d_T", "d_theta", "delta"} <= set(data["skills"][0])
    assert data["skills"][0]["skill"] == probe.steps[0].skill
    res = CliRunner().invoke(app, [str(run), "--weakness"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "SIMULATION" in res.stdout and "δ_θ per skill" in res.stdout and "δ_θ per scenario" in res.stdout
    assert probe.steps[0].skill in res.stdout


def test_cli_errors(tmp_path: Path) -> None:
    probe = random_chain(None, 3, 11)
    run, chains = _run(tmp_path, {(probe.steps[0].scenario, probe.steps[0].skill): 0.5}, n=2, extra_agent=True)
    res = CliRunner().invoke(app, [str(run), "--weakness"])
    assert res.exit_code == 2 and "several agents" in res.output and "--by-agent" in res.output
    res = CliRunner().invoke(app, [str(run), "--weakness", "--by-agent", "terminus-2", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert (data["agent"], data["model"], data["simulated"]) == ("terminus-2", "openai/x", False)
    assert data["unattributed"] == 3 and data["observations"] == 0  # failed, and no verifier output to place them
    res = CliRunner().invoke(app, [str(run), "--weakness", "--by-agent", "claude-code"])
    assert res.exit_code == 2 and "no rollouts" in res.output
    task_dir = run / "tasks" / LineageStore.open(run, create=False).versions()[0].task_hash
    res = CliRunner().invoke(app, [str(task_dir), "--weakness"])
    assert res.exit_code == 2 and "is not a run" in res.output
    res = CliRunner().invoke(app, [str(run), "--by-agent", "sim-weak"])
    assert res.exit_code == 2 and "only apply with --weakness" in res.output
    empty = LineageStore.open(tmp_path / "empty", durable=False)
    empty.create_lineage("seed", compose(chains[0]), trace=chains[0].trace(), verified=True)
    empty.close()
    res = CliRunner().invoke(app, [str(tmp_path / "empty"), "--weakness"])
    assert res.exit_code == 2 and "no rollouts" in res.output


# ---- recovery of the simulation's ground truth ------------------------------------------------------------

def _true_success(p: float, prof: SimProfile) -> float:
    """P(a step ends on the right snippet) when every command succeeds: a wrong draw is noticed (and redrawn)
    with chance `notice`, while retries remain; the last attempt decides."""
    q = p
    for _ in range(prof.retries):
        q = p + (1 - p) * prof.notice * q
    return q


def test_estimator_recovers_simulated_step_success() -> None:
    chain = random_chain(None, 4, 2)
    blocks = build_blocks(chain)
    checks = checks_of(blocks)
    prior = CatalogPrior()
    prof = PROFILES["sim-weak"].model_copy(update={"name": "sim-test", "explore": 0.0})
    commands: list[str] = []

    async def run(cmds):  # the agent side of environment.exec: record, succeed
        batch = cmds if isinstance(cmds, list) else [cmds]
        commands.extend(batch)
        return [(0, "")] * len(batch) if isinstance(cmds, list) else (0, "")

    async def episodes(n: int):
        # One stream for all episodes: the first draws of Random(0), Random(1), … are measurably correlated.
        rng = random.Random(20261130)
        return [await play(chain, blocks, prof, prior, rng, run) for _ in range(n)]

    eps = asyncio.run(episodes(3000))
    assert commands and all(ep.simulated for ep in eps)
    truth = {(s.scenario, s.skill): _true_success(eps[0].steps[t].p, prof) for t, s in enumerate(chain.steps)}
    assert max(truth.values()) - min(truth.values()) > 0.05  # the steps differ, so recovery means something

    obs, naive = [], {k: [0, 0] for k in truth}
    trace = chain.trace()
    for i, ep in enumerate(eps):
        # Ground truth of the simulation (simulation.json): a step is right when its last attempt was the oracle.
        fail_at = next((t for t, s in enumerate(ep.steps) if s.attempts[-1] != "oracle"), None)
        stdout = verifier_stdout(checks, fail_at, random.Random(i))
        steps = step_outcomes(checks, chain.L, fail_at is None, stdout)
        assert steps.attributed and steps.outcomes.count(F) == (fail_at is not None)
        obs += observations(trace, steps, prior)
        for t, s in enumerate(chain.steps):  # a naive reading: every failed check counts against its step
            failed = any(ln.startswith("FAIL") and any(ln.startswith(f"FAIL {k} {p} ") for k, p in checks[t])
                         for ln in stdout.splitlines())
            naive[(s.scenario, s.skill)][0] += 1
            naive[(s.scenario, s.skill)][1] += failed
    s_bar, _, _, pairs = estimate(obs)
    errors = {}
    for r in pairs:
        q = truth[(r.scenario, r.skill)]
        se = math.sqrt(q * (1 - q) / r.n)
        errors[(r.scenario, r.skill)] = abs(r.s_hat - q)
        assert abs(r.s_hat - q) < 4 * se + 0.01, (r, q)
    assert max(errors.values()) < 0.03
    # δ ranks steps like the truth does: the least reliable step has the largest δ, and any two steps whose
    # true success differs clearly are ordered alike.
    worst = min(truth, key=truth.get)
    assert (pairs[0].scenario, pairs[0].skill) == worst and pairs[0].delta > 0.05
    est = {(r.scenario, r.skill): r.s_hat for r in pairs}
    for a in truth:
        for b in truth:
            if truth[a] < truth[b] - 0.04:
                assert est[a] < est[b], (a, b)
    # Censoring matters: reading every failed check as that step's failure badly underrates later steps.
    last = (chain.steps[-1].scenario, chain.steps[-1].skill)
    assert 1 - naive[last][1] / naive[last][0] < truth[last] - 0.1
