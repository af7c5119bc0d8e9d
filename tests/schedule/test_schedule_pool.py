"""What schedulers take: lineages of environment records, from a run's store or the synthetic generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from envevo.catalog import SCENARIOS, SKILLS, CatalogPrior, compatible
from envevo.errors import UserError
from envevo.schedule import EnvRecord, EnvTable, ScheduleError, load_lineages, normalize_lineages, synthetic_lineages
from envevo.store import LineageStore
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of


def test_flat_records_and_dicts_are_grouped_by_lineage_and_sorted_by_generation():
    flat = [
        {"id": "b1", "lineage": "B", "generation": 1},
        EnvRecord(id="a0", lineage="A", generation=0),
        {"id": "b0", "lineage": "B", "generation": 0},
    ]
    lins = normalize_lineages(flat)
    assert [[r.id for r in lin] for lin in lins] == [["b0", "b1"], ["a0"]]
    t = EnvTable(flat)
    assert t.ids == ["b0", "b1", "a0"] and t.generation.tolist() == [0, 1, 0] and t.lineage_of.tolist() == [0, 0, 1]


@pytest.mark.parametrize(
    "bad, message",
    [
        ([], "empty"),
        ([[]], "every lineage is empty"),
        ([[EnvRecord(id="x", lineage="A", generation=0)], [EnvRecord(id="x", lineage="B", generation=0)]], "twice"),
        ([[EnvRecord(id="x", lineage="A", generation=0), EnvRecord(id="y", lineage="B", generation=1)]],
         "other lineages"),
        ([[EnvRecord(id="x", lineage="A", generation=0), EnvRecord(id="y", lineage="A", generation=0)]],
         "generation twice"),
        ([[42]], "EnvRecord or a dict"),
    ],
)
def test_bad_pools_are_refused_with_a_reason(bad, message):
    with pytest.raises(ScheduleError, match=message):
        normalize_lineages(bad)


def test_synthetic_lineages_are_deterministic_evolved_catalog_chains():
    a = synthetic_lineages(5, 6, seed=3)
    assert a == synthetic_lineages(5, 6, seed=3)
    assert a != synthetic_lineages(5, 6, seed=4)
    prior = CatalogPrior()
    for lin in a:
        assert [r.generation for r in lin] == list(range(len(lin))) and 2 <= len(lin) <= 7
        assert lin[0].direction is None and all(r.direction in {"length", "scenario", "skill"} for r in lin[1:])
        for r in lin:
            assert all(s.scenario in SCENARIOS and s.skill in SKILLS and compatible(s.scenario, s.skill)
                       for s in r.trace.steps)
            assert r.D_T == pytest.approx(prior.difficulty(r.trace).D_T)
        # evolution makes each lineage harder overall
        assert lin[-1].D_T > lin[0].D_T or len(lin) == 1
    held = synthetic_lineages(5, 6, seed=3, prefix="held")
    assert not {r.id for lin in a for r in lin} & {r.id for lin in held for r in lin}


def test_load_lineages_from_a_run_store(tmp_path: Path):
    with LineageStore.open(tmp_path / "run") as s:
        a = s.create_lineage("alpha", tiny_task("alpha"), trace=trace_of(2), difficulty=difficulty_of(2), verified=True)
        s.commit_generation(a, 1, tiny_task("alpha", "alpha 1"), direction="length", effort="high",
                            trace=trace_of(3), difficulty=difficulty_of(3), verified=True)
        s.commit_generation(a, 2, tiny_task("alpha", "alpha 2"), direction="skill", effort="high",
                            trace=trace_of(3), difficulty=difficulty_of(3), verified=False)
        s.create_lineage("beta", tiny_task("beta"), verified=False)
    lins = load_lineages(tmp_path / "run")
    assert [[r.id for r in lin] for lin in lins] == [["alpha__g00", "alpha__g01"]]
    r = lins[0][1]
    assert r.lineage == "alpha" and r.generation == 1 and r.trace == trace_of(3) and r.D_T == 6.0
    assert r.direction == "length" and r.task_hash
    every = load_lineages(tmp_path / "run", verified_only=False)
    assert [len(lin) for lin in every] == [3, 1]


def test_load_lineages_of_a_missing_run_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserError):
        load_lineages(tmp_path / "nothing-here")
