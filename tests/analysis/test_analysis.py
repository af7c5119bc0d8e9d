"""The paper's analyses: Spearman validity, per-generation trends, direction effects, claims, CLI and report."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from envevo.analysis import analyze, claims, measure_missing_drift, spearman, spearman_p, trends
from envevo.analysis._generations import GenerationPoint
from envevo.catalog import CatalogPrior, random_chain
from envevo.evolve.engines.procedural import compose, mutate
from envevo.store import LineageStore, NewRollout
from envevo.trace import Direction, Effort, difficulty
from tests.conftest import run_cli


def test_spearman_known_values_and_ties() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x = 1,2,3,4,5 ; y = 2,1,4,3,5 → 1 − 6Σd²/(n(n²−1)) = 1 − 6·4/120 = 0.8
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # ties get average ranks: y ranks 1.5,1.5,3,4
    assert spearman([1, 2, 3, 4], [5, 5, 6, 7]) == pytest.approx(0.9486832980505138)
    assert spearman([1, 2, 3], [1, 1, 1]) is None and spearman([1, 2], [2, 1]) is None


def test_permutation_p_value_separates_signal_from_noise() -> None:
    x = list(range(12))
    assert spearman_p(x, [v * 2 + 1 for v in x]) < 0.001
    noise = random.Random(3).sample(range(100), 12)
    assert spearman_p(x, noise) > 0.05


def _pt(agent, effort, gen, rate, turns=10.0):
    return GenerationPoint(agent=agent, simulated=True, effort=effort, generation=gen, tasks=1, rollouts=8,
                           pass_rate=rate, mean_turns=turns)


def test_trend_monotone_zero_and_rises() -> None:
    pts = [_pt("a", "high", g, r, 10 + g) for g, r in enumerate([0.75, 0.5, 0.5, 0.0, 0.0])]
    pts += [_pt("a", "low", g, r) for g, r in enumerate([0.75, 0.5, 0.625, 0.25, 0.375])]
    hi, lo = sorted(trends(pts), key=lambda t: t.effort)
    assert (hi.effort, hi.monotone, hi.rises, hi.zero_at) == ("high", True, 0, 3)
    assert hi.rho_generation < -0.9 and (hi.turns_first, hi.turns_last) == (10, 14)
    assert (lo.effort, lo.monotone, lo.rises, lo.zero_at) == ("low", False, 2, None)
    assert lo.max_rise == pytest.approx(0.125)


def test_claims_report_both_ways() -> None:
    good = [_pt(a, "high", g, r, 10 + 5 * g) for a in ("x", "y") for g, r in enumerate([0.5, 0.25, 0.0])]
    good += [_pt(a, "low", g, r, 10 + g) for a in ("x", "y") for g, r in enumerate([0.5, 0.625, 0.375])]
    verdicts = {c.claim: c.holds for c in claims(trends(good), [])}
    assert verdicts["At high and max effort the pass rate declines monotonically"] is True
    assert verdicts["At low effort the pass rate fluctuates and never reaches 0"] is True
    assert verdicts["Mean turns rise across generations"] is True
    assert verdicts["D_T ranks environments by measured failure (Spearman ρ > 0, p < 0.05)"] is None
    bad = [_pt("x", "max", g, r) for g, r in enumerate([0.5, 0.75, 0.25])]
    verdicts = {c.claim: c.holds for c in claims(trends(bad), [])}
    assert verdicts["At high and max effort the pass rate declines monotonically"] is False
    assert verdicts["At high and max effort the pass rate reaches 0 within the lineage"] is False
    assert verdicts["At low effort the pass rate fluctuates and never reaches 0"] is None


# Passes out of 4 per generation for a lineage whose generation g has L = 2 + g; one seed per lineage.
PASSES = {"sim-strong": [4, 3, 3, 1], "sim-weak": [2, 1, 0, 0]}


def _evaluated_run(tmp_path: Path, name: str = "run", effort: str = "high") -> Path:
    prior = CatalogPrior()
    store = LineageStore.open(tmp_path / name, durable=False)
    store.set_run_config({"effort": effort})
    for seed in (1, 2):
        rng = random.Random(seed)
        chain = random_chain(None, 2, seed)
        lid = store.create_lineage(f"s{seed}", compose(chain), trace=chain.trace(), verified=True,
                                   difficulty=difficulty(chain.trace(), prior))
        hashes = [store.latest_version(lid).task_hash]
        for g in (1, 2, 3):
            direction = Direction.LENGTH if g != 2 else Direction.SKILL
            new = mutate(chain, direction, Effort.HIGH, rng, prior)
            if new is None:  # a skill swap may not exist for this chain; lengthen instead
                direction, new = Direction.LENGTH, mutate(chain, Direction.LENGTH, Effort.HIGH, rng, prior)
            chain = new
            v = store.commit_generation(lid, g, compose(chain), direction=direction.value, effort=effort,
                                        trace=chain.trace(), difficulty=difficulty(chain.trace(), prior),
                                        verified=True, mutated=["instruction", "solution"])
            hashes.append(v.task_hash)
        for agent, passes in PASSES.items():
            for g, h in enumerate(hashes):
                for i in range(4):
                    store.add_rollout(NewRollout(task_hash=h, agent=agent, k=i, model="simulation",
                                                 reward=float(i < passes[g]), turns=10 + 10 * g, error_kind="ok",
                                                 simulated=True))
    store.close()
    return tmp_path / name


def test_analyze_a_run(tmp_path: Path) -> None:
    run = _evaluated_run(tmp_path)
    with LineageStore.open(run, create=False) as store:
        study = analyze([store])
    assert study.simulated and len(study.rows) == 2 * 4 * 2  # lineages × generations × agents
    strong = [p for p in study.points if p.agent == "sim-strong"]
    assert [p.pass_rate for p in strong] == [1.0, 0.75, 0.75, 0.25] and all(p.tasks == 2 for p in strong)
    t = next(t for t in study.trends if t.agent == "sim-weak")
    assert t.monotone and t.zero_at == 2
    single = [d for d in study.directions if d.scope == "single step" and d.agent == "sim-strong"]
    assert len(single) == 1 and single[0].direction == "length" and single[0].steps == 2
    assert single[0].d_pass == pytest.approx(-0.25) and single[0].d_turns == pytest.approx(10)
    assert single[0].mutation["instruction"] == 1.0 and single[0].mutation["environment"] == 0.0
    all_steps = [d for d in study.directions if d.scope == "all steps" and d.agent == "sim-weak"]
    assert sum(d.steps for d in all_steps) == 2 * 3
    pooled = next(v for v in study.validity if v.agent == "all agents")
    assert pooled.n == 16 and pooled.rho > 0.3 and pooled.estimator


def test_analyze_cli_json_and_errors(tmp_path: Path) -> None:
    run = _evaluated_run(tmp_path)
    for cmd in ("generations", "directions", "validity", "claims"):
        r = run_cli("analyze", cmd, str(run), "--json")
        assert r.returncode == 0, r.stderr
        json.loads(r.stdout)
    table = run_cli("analyze", "generations", str(run))
    assert "SIMULATION" in table.stdout + table.stderr
    empty = LineageStore.open(tmp_path / "empty", durable=False)
    empty.close()
    r = run_cli("analyze", "validity", str(tmp_path / "empty"))
    assert r.returncode != 0 and "no rollouts" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("analyze", "claims", str(tmp_path / "nope"))
    assert r.returncode != 0 and "not a run dir" in r.stderr


def test_report_of_several_runs_has_the_evaluation(tmp_path: Path) -> None:
    runs = [_evaluated_run(tmp_path, f"effort-{e}", e) for e in ("low", "high")]
    for run in runs:  # drift comes from the explicit analysis step (`analyze drift`); the report only reads it
        with LineageStore.open(run, create=False) as store:
            measure_missing_drift(store)
    r = run_cli("report", *map(str, runs), "--out", str(tmp_path / "study.html"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "study.html").read_text()
    assert "SIMULATION" in page and "Direction effects" in page and "Spearman" in page
    assert page.count("<h2>Run <code>") == 2
    # generations + validity plots, then per run: difficulty + semantic drift + mutation rates
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 2 + 2 * 3
    assert "g0–g3 (4)" in page


def test_single_lever_runs_count_for_directions_not_for_generation_curves(tmp_path: Path) -> None:
    full = _evaluated_run(tmp_path, "full")
    lever = _evaluated_run(tmp_path, "lever")
    with LineageStore.open(lever, create=False) as store:
        store.set_run_config({"effort": "high", "directions": ["length"]})
    with LineageStore.open(full, create=False) as a, LineageStore.open(lever, create=False) as b:
        both = analyze([a, b])
    assert all(p.tasks == 2 for p in both.points)  # only the full run's two lineages per generation
    single = next(d for d in both.directions if d.scope == "single step" and d.agent == "sim-strong")
    assert single.steps == 4  # both runs' seed → g1 steps
