"""Mutation rates (the paper's Figure 4) on hand-built runs with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from envevo.analysis import Transition, mutation_rates, rates_of
from envevo.store import LineageStore
from tests.store.test_store_support import tiny_task

# Per lineage, per generation: (direction, edits applied to the previous task). Edits name the components
# they change; "config" changes only task.toml. The mutated sets are computed by the store from the diffs.
PLAN = {
    "L1": [("length", {"instruction", "environment"}), ("skill", {"solution"}), ("length", {"instruction"})],
    "L2": [("scenario", {"verification"}), ("length", {"instruction", "verification", "solution"})],
    "L3": [("scenario", {"config"})],
}


def _evolve(store: LineageStore, name: str, steps) -> None:
    state = {"instruction": "do it", "env": "", "test": "", "solve": "", "tag": 0}
    lid = store.create_lineage(name, tiny_task(name, state["instruction"]))
    for g, (direction, edits) in enumerate(steps, start=1):
        if "instruction" in edits:
            state["instruction"] += f" then step {g}"
        if "environment" in edits:
            state["env"] += f"RUN echo {g}\n"
        if "verification" in edits:
            state["test"] += f"test -d /app # {g}\n"
        if "solution" in edits:
            state["solve"] += f"mkdir -p /app # {g}\n"
        task = tiny_task(name, state["instruction"], env=state["env"], test=state["test"], solve=state["solve"])
        if "config" in edits:
            state["tag"] += 1
        if state["tag"]:
            task.update_envevo_metadata(tag=state["tag"])
        v = store.commit_generation(lid, g, task, direction=direction, effort="high", verified=True)
        assert set(v.mutated) == edits, (name, g, v.mutated)


@pytest.fixture
def one_run(tmp_path: Path) -> Path:
    with LineageStore.open(tmp_path / "run") as s:
        for name, steps in PLAN.items():
            _evolve(s, name, steps)
    return tmp_path / "run"


def _check_known_answers(stats) -> None:
    assert stats.lineages == 3
    g1, g2, g3 = stats.generations
    assert (g1.generation, g1.n, g2.n, g3.n) == (1, 3, 2, 1)
    assert g1.rates == pytest.approx(
        {"instruction": 1 / 3, "environment": 1 / 3, "verification": 1 / 3, "solution": 0.0}
    )
    assert g1.total == pytest.approx(2 / 3)  # L3 changed only config: not a mutation
    assert g2.rates == pytest.approx({"instruction": 1 / 2, "environment": 0.0, "verification": 1 / 2, "solution": 1.0})
    assert g2.total == pytest.approx(1 / 2)  # L1 changed only the solution: not counted in the total
    assert g3.rates == pytest.approx({"instruction": 1.0, "environment": 0.0, "verification": 0.0, "solution": 0.0})
    assert g3.total == 1.0
    assert stats.mean["instruction"] == pytest.approx((1 / 3 + 1 / 2 + 1) / 3)
    assert stats.mean["solution"] == pytest.approx((0 + 1 + 0) / 3)
    assert stats.mean_total == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    by_dir = {d.direction: d for d in stats.by_direction}
    assert (by_dir["length"].n, by_dir["scenario"].n, by_dir["skill"].n) == (3, 2, 1)
    assert by_dir["length"].rates == pytest.approx(
        {"instruction": 1.0, "environment": 1 / 3, "verification": 1 / 3, "solution": 1 / 3}
    )
    assert by_dir["length"].total == 1.0
    assert by_dir["scenario"].total == pytest.approx(1 / 2) and by_dir["skill"].total == 0.0


def test_mutation_rates_of_one_run(one_run: Path) -> None:
    _check_known_answers(mutation_rates([one_run]))


def test_mutation_rates_pool_runs(tmp_path: Path) -> None:
    with LineageStore.open(tmp_path / "a") as s:
        _evolve(s, "L1", PLAN["L1"])
        _evolve(s, "L2", PLAN["L2"])
    with LineageStore.open(tmp_path / "b") as s:
        _evolve(s, "L3", PLAN["L3"])
    stats = mutation_rates([tmp_path / "a", tmp_path / "b"])
    _check_known_answers(stats)
    assert len(stats.runs) == 2


def test_same_lineage_id_in_two_runs_counts_twice(tmp_path: Path) -> None:
    for run in ("a", "b"):
        with LineageStore.open(tmp_path / run) as s:
            _evolve(s, "L1", PLAN["L1"])
    with LineageStore.open(tmp_path / "b") as b:  # stores and paths mix
        stats = mutation_rates([tmp_path / "a", b])
    assert stats.lineages == 2 and stats.generations[0].n == 2


def test_rates_without_evolved_generations(tmp_path: Path) -> None:
    with LineageStore.open(tmp_path) as s:
        s.create_lineage("seed", tiny_task("seed"))
        stats = mutation_rates([s])
    assert stats.generations == [] and stats.mean_total is None and stats.mean["instruction"] is None
    assert rates_of([]).lineages == 0


def test_rates_of_is_pure_math() -> None:
    ts = [
        Transition(run="r", lineage="a", generation=1, direction="skill", mutated=frozenset({"config"})),
        Transition(
            run="r", lineage="b", generation=1, direction="skill", mutated=frozenset({"environment", "solution"})
        ),
    ]
    stats = rates_of(ts)
    assert stats.generations[0].rates == {"instruction": 0.0, "environment": 0.5, "verification": 0.0, "solution": 0.5}
    assert stats.generations[0].total == 0.5 and stats.mean_total == 0.5


def test_kept_counts_the_files_an_edit_left_byte_identical(tmp_path: Path) -> None:
    """A skill edit that rewrites one of three fixture files mutates the environment, yet keeps 2 of its 3 files."""
    def task(fixture: str, instruction: str):
        t = tiny_task("k", instruction)
        for name, body in (("a.py", "A"), ("b.py", "B"), ("c.py", fixture)):
            t.write(f"environment/fixtures/{name}", body)
        return t

    with LineageStore.open(tmp_path / "run") as s:
        lid = s.create_lineage("k", task("C", "do it"))
        s.commit_generation(lid, 1, task("C2", "do it then more"), direction="skill", effort="low", verified=True)
    (row,) = mutation_rates([tmp_path / "run"]).by_direction_effort
    assert row.rates["environment"] == 1.0 and row.rates["solution"] == 0.0
    assert row.kept["environment"] == pytest.approx(3 / 4)  # the Dockerfile, a.py and b.py of 4 files
    assert row.kept["instruction"] == 0.0 and row.kept["solution"] == 1.0 and row.kept["verification"] == 1.0
