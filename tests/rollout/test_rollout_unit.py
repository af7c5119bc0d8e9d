"""Rollouts without a sandbox: pass@k, summaries, profile math, the simulated episode, resume, seed selection."""

from __future__ import annotations

import asyncio
import json
import random
from math import comb
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from envevo.catalog import CatalogPrior, build_blocks, random_chain
from envevo.cli.seeds_cmd import parse_fraction, rollout_reasons, select
from envevo.errors import UserError
from envevo.evolve.engines.procedural import write_task
from envevo.rollout import PROFILES, agent_label, dir_targets, pass_at_k, pending, play, step_probability, summarize
from envevo.store import LineageStore, NewRollout


def test_pass_at_k_known_values() -> None:
    assert pass_at_k(8, 0, 8) == 0.0
    assert pass_at_k(8, 1, 8) == 1.0
    assert pass_at_k(8, 4, 1) == pytest.approx(0.5)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - comb(7, 2) / comb(10, 2))
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


@given(st.integers(1, 20).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_is_monotone_in_k_and_c(args) -> None:
    n, c, k = args
    v = pass_at_k(n, c, k)
    assert 0.0 <= v <= 1.0
    if k < n:
        assert pass_at_k(n, c, k + 1) >= v - 1e-12
    if c < n:
        assert pass_at_k(n, c + 1, k) >= v - 1e-12


def _row(reward, turns, kind="ok"):
    return SimpleNamespace(reward=reward, turns=turns, error_kind=kind,
                           passed=kind == "ok" and reward is not None and reward >= 1.0)


def test_summary_counts_and_excludes_infrastructure() -> None:
    rows = [_row(1.0, 10), _row(0.0, 20), _row(None, None, "agent_timeout"), _row(None, None, "infrastructure_error")]
    s = summarize("t", rows, agent="a")
    assert (s.n, s.passes, s.label) == (3, 1, "1/3")
    assert s.pass_rate == pytest.approx(1 / 3) and s.mean_turns == 15 and s.pass_at_k == 1.0
    assert s.errors == {"agent_timeout": 1}


def test_summary_reports_tokens_and_cost_where_known() -> None:
    rows = [SimpleNamespace(reward=1.0, turns=4, error_kind="ok", passed=True, input_tokens=900, output_tokens=80, cost_usd=0.01),
            SimpleNamespace(reward=0.0, turns=2, error_kind="ok", passed=False, input_tokens=300, output_tokens=20, cost_usd=None)]
    s = summarize("t", rows, agent="terminus-2")
    assert (s.mean_input_tokens, s.mean_output_tokens, s.cost_usd) == (600, 50, 0.01)
    assert summarize("t", [_row(1.0, 3)], agent="a").cost_usd is None


def test_profiles_are_distinct_and_ordered() -> None:
    prior, chain = CatalogPrior(), random_chain(None, 4, 1)
    assert set(PROFILES) >= {"sim-strong", "sim-medium", "sim-weak"}
    for st_ in chain.steps:
        ps = [step_probability(PROFILES[n], prior, st_.scenario, st_.skill, chain.goal)
              for n in ("sim-strong", "sim-medium", "sim-weak")]
        assert 1 > ps[0] > ps[1] > ps[2] > 0


def test_rarer_skill_is_harder() -> None:
    prior, prof = CatalogPrior(), PROFILES["sim-medium"]
    goal = random_chain(None, 2, 0).goal
    from envevo.catalog import SCENARIOS, skills_for

    sc = next(s for s in SCENARIOS if len(skills_for(s)) > 1)
    by_cost = sorted(skills_for(sc), key=lambda k: prior.neg_log_p_skill(k, sc, goal))
    easy, rare = by_cost[0], by_cost[-1]
    if prior.neg_log_p_skill(easy, sc, goal) < prior.neg_log_p_skill(rare, sc, goal):
        assert step_probability(prof, prior, sc, easy, goal) > step_probability(prof, prior, sc, rare, goal)


def _episode(p_step: float, ok_rc: int = 0):
    chain = random_chain(None, 3, 2)
    cmds: list[str] = []

    async def run(batch: list[str]):
        cmds.extend(batch)
        return [(ok_rc, "")] * len(batch)

    prof = PROFILES["sim-strong"].model_copy(update={"p_step": p_step})
    ep = asyncio.run(play(chain, build_blocks(chain), prof, CatalogPrior(), random.Random(0), run))
    return ep, cmds


def test_episode_every_command_is_a_turn() -> None:
    ep, cmds = _episode(1.0)
    assert ep.turns == len(cmds) and ep.simulated
    assert all(s.attempts == ["oracle"] for s in ep.steps)  # competent: one attempt per step
    ep0, _ = _episode(0.0)
    assert all(set(s.attempts) == {"wrong"} for s in ep0.steps)


def test_batched_commands_report_their_own_exit_codes(tmp_path: Path) -> None:
    # Harmless commands written here (not task code), run by the host's bash to check the batch protocol:
    # each command gets its own exit code, stdin is closed (cat returns at once), a missing mark reads as 255.
    import subprocess

    from envevo.rollout._episode import batch_script, parse_batch, shell

    cmds = ["echo first", "exit 3", "cat", shell("echo \"it's\"; exit 5")]
    out = subprocess.run(["bash", "-c", batch_script(cmds)], capture_output=True, text=True, timeout=30).stdout
    got = parse_batch(out, len(cmds))
    assert [rc for rc, _ in got] == [0, 3, 0, 5]
    assert got[0][1].strip() == "first" and got[3][1].strip() == "it's"
    assert parse_batch("partial output", 2) == [(255, "partial output"), (255, "")]


def test_failed_self_check_earns_retries() -> None:
    ep, cmds = _episode(1.0, ok_rc=1)
    retries = PROFILES["sim-strong"].retries
    assert all(len(s.attempts) == retries + 1 and not any(s.self_check) for s in ep.steps)


def test_simulated_labels() -> None:
    assert agent_label("sim-weak", "gpt") == ("sim-weak", "simulation")
    assert agent_label("terminus-2", "openai/x") == ("terminus-2", "openai/x")
    with pytest.raises(UserError, match="unknown simulated agent"):
        agent_label("sim-nope", None)


def _seed_store(tmp_path: Path):
    paths = [write_task(random_chain(None, 2, s), tmp_path / f"t{s}") for s in (1, 2)]
    targets = dir_targets(paths)
    store = LineageStore.open(tmp_path / "run", durable=False)
    # t1: hard and long; t2: easy. Rollout 3 of t1 hit infrastructure and must be re-run on resume.
    for i in range(4):
        store.add_rollout(NewRollout(task_hash=targets[0].task_hash, agent="sim-strong", k=i, model="simulation",
                                     reward=float(i == 0), turns=40, simulated=True,
                                     error_kind="infrastructure_error" if i == 3 else "ok"))
        store.add_rollout(NewRollout(task_hash=targets[1].task_hash, agent="sim-strong", k=i, model="simulation",
                                     reward=1.0, turns=12, error_kind="ok", simulated=True))
    return paths, targets, store


def test_resume_skips_recorded_rollouts(tmp_path: Path) -> None:
    _, targets, store = _seed_store(tmp_path)
    todo = pending(targets, "sim-strong", "simulation", 6, store)
    assert [(t.task_hash == targets[0].task_hash, i) for t, i in todo] == [(True, 3), (True, 4), (True, 5), (False, 4), (False, 5)]
    store.close()


def test_seed_selection_thresholds(tmp_path: Path) -> None:
    paths, _, store = _seed_store(tmp_path)
    store.close()
    assert parse_fraction("4/8") == 0.5
    with pytest.raises(UserError):
        parse_fraction("four")
    app = typer.Typer()
    app.command()(select)
    res = CliRunner().invoke(app, [*map(str, paths), "--run", str(tmp_path / "run"), "--no-verify",
                                   "--min-turns", "30", "--out", str(tmp_path / "seeds"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["selected"] == [str(paths[0])]
    [rejected] = [t for t in doc["tasks"] if not t["selected"]]
    assert any("too easy" in r for r in rejected["reasons"]) and any("too short" in r for r in rejected["reasons"])
    assert (tmp_path / "seeds" / "tasks" / paths[0].name / "task.toml").is_file()
    assert json.loads((tmp_path / "seeds" / "selection.json").read_text())["selected"] == doc["selected"]


def test_no_rollouts_is_a_reason() -> None:
    s = summarize("t", [], agent="a")
    assert rollout_reasons(s, 0.5, 30) == ["no rollouts recorded; run `envevo rollout TASK --run RUN` first"]


def test_generation_table_averages_lineages(tmp_path: Path) -> None:
    from envevo.analysis import analyze
    from envevo.evolve.engines.procedural import compose, mutate
    from envevo.trace import Direction, Effort

    prior, rng = CatalogPrior(), random.Random(0)
    store = LineageStore.open(tmp_path / "run", durable=False)
    store.set_run_config({"effort": "high"})
    for seed in (1, 2):
        chain = random_chain(None, 2, seed)
        lid = store.create_lineage(f"s{seed}", compose(chain), trace=chain.trace(), verified=True)
        hashes = [store.latest_version(lid).task_hash]
        chain = mutate(chain, Direction.LENGTH, Effort.HIGH, rng, prior)
        hashes.append(store.commit_generation(lid, 1, compose(chain), direction="length", effort="high",
                                              trace=chain.trace(), verified=True).task_hash)
        for gen, h in enumerate(hashes):
            for i in range(4):  # generation 0 passes 3/4 (s1) and 1/4 (s2); generation 1 always fails
                passed = gen == 0 and i < (3 if seed == 1 else 1)
                store.add_rollout(NewRollout(task_hash=h, agent="sim-weak", k=i, model="simulation", reward=float(passed),
                                             turns=10 + 10 * gen, error_kind="ok", simulated=True))
    points = analyze([store]).points
    store.close()
    assert [(p.generation, p.tasks, p.rollouts) for p in points] == [(0, 2, 8), (1, 2, 8)]
    assert points[0].pass_rate == pytest.approx(0.5) and points[1].pass_rate == 0.0
    assert (points[0].mean_turns, points[1].mean_turns) == (10, 20)
    assert all(p.simulated and p.effort == "high" for p in points)


def test_tokens_a_model_agent_did_not_count_are_stored_as_unknown(tmp_path: Path, monkeypatch) -> None:
    """A harness that got no usage from the server reports 0/0 (terminus-2 starts its counters at 0): stored as
    unknown (NULL), not as a free rollout; counted tokens are kept (issue 25, defect 8)."""
    from envevo.rollout import Target, rollout
    from envevo.runtime import TrialOutcome

    reported = [(0, 0, 0.0), (900, 80, 0.01)]

    async def fake_trials(specs, *, concurrency, retries, on_done):
        for j, (n_in, n_out, cost) in enumerate(reported[: len(specs)]):
            await on_done(j, TrialOutcome(task="t", agent="terminus-2", model="openai/m", reward=0.0,
                                          n_input_tokens=n_in, n_output_tokens=n_out, cost_usd=cost))

    monkeypatch.setattr("envevo.runtime.run_trials", fake_trials)
    monkeypatch.setattr("envevo.rollout._run.check_agent", lambda *a, **k: None)
    target = Target(name="t", task_dir=tmp_path, task_hash="a" * 64)
    with LineageStore.open(tmp_path / "run") as store:
        (summary,) = asyncio.run(rollout([target], "terminus-2", "openai/m", 2, trials_dir=tmp_path / "trials",
                                         store=store))
        rows = store.rollouts(target.task_hash)
    assert [(r.input_tokens, r.output_tokens, r.cost_usd) for r in rows] == [(None, None, None), (900, 80, 0.01)]
    assert (summary.mean_input_tokens, summary.mean_output_tokens) == (900, 80)


def test_seed_selection_verifies_with_the_seed_gate_of_evolve(tmp_path: Path, monkeypatch) -> None:
    """A selected seed must pass what `evolve` gates a seed with (red team and mutation included); with the library's
    verify default (oracle and invalid-test only), a selected seed could end its lineage at the seed gate."""
    import envevo.sandbox as sandbox
    import envevo.verify as verify
    from envevo.evolve import EvolveConfig
    from envevo.rollout import select_seeds

    paths, _, store = _seed_store(tmp_path)
    store.close()
    seen: dict = {}

    async def fake_verify(tasks, jobs, env, verifiers, concurrency, strict=False):
        seen["names"] = sorted(v.name for v in verifiers)
        return [verify.Verdict(task=name, task_dir=d, ok=True, reports={}) for name, d in tasks]

    monkeypatch.setattr(verify, "verify_tasks", fake_verify)
    monkeypatch.setattr(sandbox, "preflight", lambda env, notify=None: None)
    asyncio.run(select_seeds(paths, tmp_path / "run", tmp_path / "seeds", min_turns=30))
    gate = {v.name for v in verify.default_verifiers(2, red_team=EvolveConfig().red_team,
                                                    mutation=EvolveConfig().mutation)}
    assert set(seen["names"]) == gate and {"red_team", "mutation"} <= gate
    asyncio.run(select_seeds(paths, tmp_path / "run", tmp_path / "seeds2", min_turns=30, red_team="off", mutation="off"))
    assert "red_team" not in seen["names"] and "mutation" not in seen["names"]


def test_infrastructure_failures_are_counted_and_said_in_the_summary_json(tmp_path: Path, monkeypatch) -> None:
    """A trial the infrastructure failed is not counted in n, but it does not vanish from `rollout --json`: its count
    and reason appear per task, from this run's outcomes also when the store keeps no message (issue 25)."""
    from envevo.rollout import rollout
    from envevo.runtime import ErrorKind, TrialOutcome

    async def run_trials(specs, concurrency, retries, on_done):
        for j, spec in enumerate(specs):
            kind = ErrorKind.INFRASTRUCTURE_ERROR if j else ErrorKind.OK
            await on_done(j, TrialOutcome(task="t", agent=spec.agent, reward=None if j else 1.0, error_kind=kind,
                                          error_message="podman build failed: no space left on device" if j else None))

    monkeypatch.setattr("envevo.runtime.run_trials", run_trials)
    targets = dir_targets([write_task(random_chain(None, 2, 3), tmp_path / "t")])
    with LineageStore.open(tmp_path / "run") as store:
        (s,) = asyncio.run(rollout(targets, "oracle", None, 3, trials_dir=tmp_path / "trials", store=store))
    data = json.loads(json.dumps(s.model_dump()))
    assert (data["n"], data["passes"], data["infrastructure_errors"]) == (1, 1, 2)
    assert data["infrastructure_reasons"] == ["podman build failed: no space left on device"]
