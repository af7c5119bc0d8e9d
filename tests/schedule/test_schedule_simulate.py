"""The curriculum simulator: the synthetic learner's GRPO rule, the metrics, and `envevo schedule simulate`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from envevo.cli.schedule_cmd import schedule_app
from envevo.schedule import EnvRecord, synthetic_lineages
from envevo.schedule._learner import LearnerConfig, SyntheticLearner
from envevo.schedule._simulate import METRICS, SIMULATION_LABEL, SimConfig, simulate
from envevo.schedule._stats import beta_sf, mean_ci, t975
from envevo.store import LineageStore
from envevo.trace import Step, Trace
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of

fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POOL = synthetic_lineages(8, 8, seed=1)
RECS = [r for lin in POOL for r in lin]

app = typer.Typer()
app.add_typer(schedule_app, name="schedule")


@app.callback()
def _root() -> None:
    pass


runner = CliRunner()


# ------------------------------------------------------------------------------------------ the learner


@fast
@given(st.integers(0, 10_000),
       st.lists(st.tuples(st.integers(0, len(RECS) - 1), st.booleans()), min_size=1, max_size=12))
def test_zero_variance_groups_never_change_the_learner(seed, groups):
    learner = SyntheticLearner(RECS, seed=seed)
    envs = learner.compile(RECS)
    c, f = learner.competence.copy(), learner.familiarity.copy()
    rows = [g[0] for g in groups]
    rewards = [[1.0 if g[1] else 0.0] * 8 for g in groups]  # all pass or all fail
    assert learner.update(envs, rows, rewards, batch_size=len(groups)) == 0
    assert np.array_equal(learner.competence, c) and np.array_equal(learner.familiarity, f)


@fast
@given(st.integers(0, 10_000), st.integers(0, len(RECS) - 1), st.integers(1, 7))
def test_a_partially_solved_group_raises_only_its_own_skills_and_scenarios(seed, row, passes):
    learner = SyntheticLearner(RECS, seed=seed)
    envs = learner.compile(RECS)
    c, f = learner.competence.copy(), learner.familiarity.copy()
    p0 = learner.success(envs, [row])[0]
    assert learner.update(envs, [row], [[1.0] * passes + [0.0] * (8 - passes)], batch_size=1) == 1
    skills = {learner.skill_index[s.skill] for s in RECS[row].trace.steps}
    scen = {learner.scenario_index[s.scenario] for s in RECS[row].trace.steps}
    moved_c = set(np.flatnonzero(learner.competence != c).tolist())
    moved_f = set(np.flatnonzero(learner.familiarity != f).tolist())
    assert moved_c == skills and moved_f == scen
    assert np.all(learner.competence >= c)
    assert learner.success(envs, [row])[0] > p0


def test_update_is_proportional_to_mean_absolute_advantage():
    rec = EnvRecord(id="e", lineage="l", generation=0, trace=Trace(goal="g", steps=(Step(scenario="s", skill="k"),)))
    deltas = {}
    for passes in (1, 4):
        learner = SyntheticLearner([rec], LearnerConfig(init_noise=0.0), seed=0)
        envs = learner.compile([rec])
        learner.update(envs, [0], [[1.0] * passes + [0.0] * (8 - passes)], batch_size=1)
        deltas[passes] = learner.competence[learner.skill_index["k"]]
    # mean |r − r̄| of a binary group at rate p is 2p(1 − p)
    assert deltas[4] / deltas[1] == pytest.approx((2 * 0.5 * 0.5) / (2 * 0.125 * 0.875))


def test_success_is_a_product_over_steps():
    one = Trace(goal="g", steps=(Step(scenario="s", skill="k"),))
    two = Trace(goal="g", steps=(Step(scenario="s", skill="k"), Step(scenario="s", skill="k")))
    recs = [EnvRecord(id="a", lineage="a", generation=0, trace=one),
            EnvRecord(id="b", lineage="b", generation=0, trace=two)]
    learner = SyntheticLearner(recs, seed=0)
    p = learner.success(learner.compile(recs))
    assert p[1] == pytest.approx(p[0] ** 2)


def test_rarer_and_longer_lineage_versions_are_harder_initially():
    learner = SyntheticLearner(RECS, seed=0)
    p = learner.success(learner.compile(RECS))
    by_gen: dict[int, list[float]] = {}
    for r, x in zip(RECS, p, strict=False):
        by_gen.setdefault(r.generation, []).append(x)
    means = [np.mean(by_gen[g]) for g in sorted(by_gen)]
    assert means[0] > means[-1] + 0.2


# ------------------------------------------------------------------------------------------ simulate


def test_simulation_metrics_shapes_and_determinism():
    cfg = SimConfig(steps=12, seeds=3, batch_envs=4, early_steps=5, eval_every=4)
    specs = ["el", "random", "dapo"]
    a = simulate(POOL, specs, cfg)
    b = simulate(POOL, specs, cfg)
    assert a.simulation is True and a.label == SIMULATION_LABEL
    assert a.summary == b.summary
    assert set(a.summary) == set(specs) and set(a.paired) == {"random", "dapo"} and a.reference == "el"
    assert a.pool["heldout_lineages"] == 2 and a.pool["lineages"] == 6  # every 4th lineage held out
    for s in specs:
        assert set(a.summary[s]) == set(METRICS)
        for ci in a.summary[s].values():
            if ci["mean"] is not None and ci["lo"] is not None:
                assert ci["lo"] <= ci["mean"] <= ci["hi"]
    assert len(a.runs) == 9
    for r in a.runs:
        assert len(r.partial_curve) == len(r.reward_curve) == 12
        assert [x for x, _ in r.heldout_curve] == [0, 4, 8, 12]
        assert all(0 <= v <= 1 for v in r.partial_curve + r.reward_curve)
        assert 0 <= r.metrics["partial_frac_early"] <= 1 and 0 <= r.metrics["heldout_success"] <= 1
    el_runs = [r for r in a.runs if r.scheduler == "el"]
    assert all(r.metrics["rollouts"] == 12 * 4 * 8 for r in el_runs)
    # paired differences are differences of the per-seed metrics
    diffs = [next(r for r in a.runs if r.scheduler == "random" and r.seed == s).metrics["reward"]
             - next(r for r in a.runs if r.scheduler == "el" and r.seed == s).metrics["reward"] for s in range(3)]
    assert a.paired["random"]["reward"]["mean"] == pytest.approx(np.mean(diffs))


def test_dynamic_sampling_pays_rollouts_for_a_full_informative_batch():
    cfg = SimConfig(steps=20, seeds=1, batch_envs=8)
    res = simulate(POOL, ["random", "dapo"], cfg)
    dapo, rand = res.summary["dapo"], res.summary["random"]
    assert dapo["rollouts"]["mean"] > 20 * 8 * 8 == rand["rollouts"]["mean"]
    assert dapo["signal_frac"]["mean"] > rand["signal_frac"]["mean"]
    assert dapo["signal_frac"]["mean"] > 0.95


def test_async_lag_still_accounts_every_group():
    cfg = SimConfig(steps=10, seeds=1, batch_envs=4, lag=3)
    res = simulate(POOL, ["el"], cfg)
    prog = res.runs[0].progress
    assert prog["served"] == 40 and prog["observed"] == 28  # the last 3 steps are still in flight


def test_el_beats_random_on_early_partial_groups_and_reward():
    """The paper's Figure 5 claim, as this simulator reproduces it on a synthetic pool (a simulation)."""
    cfg = SimConfig(steps=50, seeds=3, batch_envs=8)
    res = simulate(synthetic_lineages(12, 10, seed=2), ["el", "random"], cfg)
    d = res.paired["random"]
    assert d["partial_frac_early"]["hi"] < 0 and d["reward_early"]["hi"] < 0


def test_unknown_scheduler_fails_before_any_run():
    from envevo.schedule import ScheduleError

    with pytest.raises(ScheduleError, match="unknown scheduler"):
        simulate(POOL, ["el", "bogus"], SimConfig(steps=1, seeds=1))
    with pytest.raises(ScheduleError, match="twice"):
        simulate(POOL, ["el", "el"], SimConfig(steps=1, seeds=1))


# ------------------------------------------------------------------------------------------ stats


def test_beta_tail_matches_the_binomial_identity():
    for a, b in [(1, 1), (8, 2), (9, 1), (13, 5), (2, 9), (40, 15)]:
        n = a + b - 1
        ref = sum(math.comb(n, j) * 0.75**j * 0.25 ** (n - j) for j in range(a))
        assert beta_sf(0.75, a, b) == pytest.approx(ref, abs=1e-12)


def test_mean_ci():
    assert mean_ci([1.0, None]) == {"mean": 1.0, "lo": None, "hi": None, "n": 1}
    ci = mean_ci([1.0, 2.0, 3.0])
    assert ci["mean"] == 2.0 and ci["hi"] - 2.0 == pytest.approx(t975(2) * 1.0 / math.sqrt(3))
    assert mean_ci([None])["mean"] is None


# ------------------------------------------------------------------------------------------ CLI


def test_cli_json_output(tmp_path: Path):
    res = runner.invoke(app, ["schedule", "simulate", "--schedulers", "el,random,el+patience", "--steps", "6",
                              "--repeats", "2", "--batch-envs", "4", "--synthetic-lineages", "5", "--synthetic-generations", "4",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"simulation", "label", "config", "pool", "schedulers", "reference", "summary", "paired", "notes", "runs",
            "seconds", "files"} <= set(data)
    assert data["simulation"] is True and "SIMULATION" in data["label"]
    assert data["schedulers"] == ["el", "random", "el+patience"]
    assert set(data["summary"]["el"]) == set(METRICS)
    assert {"mean", "lo", "hi", "n"} == set(data["summary"]["random"]["reward"])
    assert len(data["runs"]) == 6 and set(data["runs"][0]) == {"scheduler", "seed", "metrics", "progress"}


def test_cli_table_and_report_files(tmp_path: Path):
    out = tmp_path / "sim"
    res = runner.invoke(app, ["schedule", "simulate", "--schedulers", "el,random", "--steps", "4", "--repeats", "2",
                              "--batch-envs", "4", "--synthetic-lineages", "4", "--synthetic-generations", "3",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "SIMULATION" in res.stdout and "difference from el" in res.stdout
    for name in ["partial.png", "reward.png", "heldout.png", "summary.png", "simulation.html", "simulation.json"]:
        assert (out / name).stat().st_size > 0
    assert (out / "partial.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "simulation.html").read_text()
    assert page.count("data:image/png;base64,") == 4 and "SIMULATION" in page and "src=\"http" not in page
    assert json.loads((out / "simulation.json").read_text())["simulation"] is True


def test_cli_on_a_run_dir_with_few_lineages_uses_a_synthetic_holdout(tmp_path: Path):
    with LineageStore.open(tmp_path / "run") as s:
        a = s.create_lineage("alpha", tiny_task("alpha"), trace=trace_of(2), difficulty=difficulty_of(2), verified=True)
        s.commit_generation(a, 1, tiny_task("alpha", "alpha 1"), direction="length", effort="high",
                            trace=trace_of(3), difficulty=difficulty_of(3), verified=True)
    res = runner.invoke(app, ["schedule", "simulate", "--run", str(tmp_path / "run"), "--steps", "3",
                              "--repeats", "1", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["pool"]["environments"] == 2 and "synthetic" in data["pool"]["heldout"]
    assert data["notes"]["coevo"]  # no skill-only variant in this run


@pytest.mark.parametrize(
    "args, message",
    [
        (["--schedulers", "el,bogus"], "unknown scheduler 'bogus'"),
        (["--schedulers", "random+beta"], "no extension 'beta'"),
        (["--run", "/nonexistent/run"], "is not a run directory"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, message):
    res = runner.invoke(app, ["schedule", "simulate", "--steps", "1", "--repeats", "1", *args])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output


def test_cli_list():
    res = runner.invoke(app, ["schedule", "list", "--json"])
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows][:7] == ["el", "random", "plr", "sfl", "dapo", "pools", "coevo"]
    assert rows[0]["extensions"] == ["patience", "frontier", "beta"]
