"""`envevo analyze generations` shows the simulated profiles' exact curve beside the sampled one (SIMULATION)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envevo.analysis import analyze
from envevo.catalog import CatalogPrior, chain_from_task
from envevo.rollout import PROFILES, expected
from envevo.store import LineageStore
from envevo.task import load_task
from tests.analysis.test_analysis import _evaluated_run
from tests.conftest import run_cli


def test_each_point_carries_the_exact_expectation_of_its_versions(tmp_path: Path) -> None:
    run = _evaluated_run(tmp_path)
    with LineageStore.open(run, create=False) as store:
        study = analyze([store])
        for row in study.rows:
            chain = chain_from_task(load_task(store.task_dir(row.task_hash)))
            exact = expected(chain, PROFILES[row.agent], CatalogPrior())
            assert (row.exact_pass_rate, row.exact_turns) == pytest.approx((exact.pass_rate, exact.turns))
    for p in study.points:
        rows = [r for r in study.rows if (r.agent, r.generation) == (p.agent, p.generation)]
        assert p.exact_pass_rate == pytest.approx(sum(r.exact_pass_rate for r in rows) / len(rows))
    strong = next(t for t in study.trends if t.agent == "sim-strong")
    weak = next(t for t in study.trends if t.agent == "sim-weak")
    assert strong.exact_pass_rates and len(strong.exact_pass_rates) == len(strong.pass_rates)
    # every generation lengthens or swaps toward rarer pairs here, so the exact curves fall, strong above weak
    assert all(s >= w for s, w in zip(strong.exact_pass_rates, weak.exact_pass_rates, strict=True))
    assert strong.exact_pass_rates[-1] < strong.exact_pass_rates[0]


def test_generations_table_and_json_show_the_exact_curve(tmp_path: Path) -> None:
    run = _evaluated_run(tmp_path)
    import os

    r = run_cli("analyze", "generations", str(run), env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "exact (sim)" in r.stdout and "exact monotone" in r.stdout and "SIMULATION" in r.stdout
    data = json.loads(run_cli("analyze", "generations", str(run), "--json").stdout)
    assert all(p["exact_pass_rate"] is not None for p in data["points"])
    assert all(t["exact_monotone"] is not None for t in data["trends"])


def test_validity_and_claims_are_also_judged_on_the_exact_expectation(tmp_path: Path) -> None:
    from envevo.analysis._stats import spearman

    run = _evaluated_run(tmp_path)
    with LineageStore.open(run, create=False) as store:
        study = analyze([store])
    for v in study.validity:
        rows = [r for r in study.rows if v.agent in (r.agent, "all agents")]
        assert v.rho_exact == pytest.approx(spearman([r.D_T for r in rows], [1 - r.exact_pass_rate for r in rows]))
    exact_claims = [c for c in study.claims if c.claim.startswith("SIMULATION, exact expectation")]
    hard = [t for t in study.trends if t.effort in ("high", "max") and len(t.generations) >= 3]
    assert hard  # a high-effort run: the claim's verdict follows the exact curves, not the sampled ones
    claim = next(c for c in exact_claims if "high and max" in c.claim)
    assert claim.holds is not None
    assert claim.holds == all(t.exact_monotone and t.exact_pass_rates[-1] < t.exact_pass_rates[0] for t in hard)
    assert all(f"{t.agent}/{t.effort}" in claim.evidence for t in hard)


def test_a_direction_effect_carries_the_exact_change_of_its_steps(tmp_path: Path) -> None:
    run = _evaluated_run(tmp_path)
    with LineageStore.open(run, create=False) as store:
        study = analyze([store])
    by = {(r.lineage, r.task_hash, r.agent): r for r in study.rows}
    single = next(d for d in study.directions if d.scope == "single step" and d.agent == "sim-strong")
    steps = [(by[(r.lineage, r.parent_hash, r.agent)], r) for r in study.rows
             if r.agent == "sim-strong" and r.generation == 1 and r.direction == single.direction]
    assert len(steps) == single.steps == 2
    assert single.d_pass_exact == pytest.approx(sum(b.exact_pass_rate - a.exact_pass_rate for a, b in steps) / 2)
    assert single.d_pass_exact < 0  # a length edit adds a step the profile can fail
