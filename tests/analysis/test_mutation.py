"""Mutation rates per (direction, effort), and the procedural engine's rates: below 1 where a direction does not reach."""

from __future__ import annotations

import random

import pytest

from envevo.analysis import Transition, rates_of
from envevo.catalog import random_chain
from envevo.evolve.engines.procedural import compose, mutate
from envevo.task import diff_tasks


def _t(lineage: str, direction: str, effort: str, *mutated: str) -> Transition:
    return Transition(run="r", lineage=lineage, generation=1, direction=direction, effort=effort,
                      mutated=frozenset(mutated))


def test_rates_split_by_direction_and_effort_in_effort_order() -> None:
    stats = rates_of([
        _t("a", "skill", "max", "instruction"),
        _t("b", "skill", "low", "instruction", "solution"),
        _t("c", "skill", "low", "instruction", "environment"),
        _t("d", "length", "high", "environment"),
    ])
    rows = [(r.direction, r.effort, r.n) for r in stats.by_direction_effort]
    assert rows == [("length", "high", 1), ("skill", "low", 2), ("skill", "max", 1)]
    low = stats.by_direction_effort[1]
    assert low.rates == pytest.approx({"instruction": 1.0, "environment": 0.5, "verification": 0.0, "solution": 0.5})
    assert low.total == 1.0
    # the per-direction pool still counts every effort
    assert {d.direction: d.n for d in stats.by_direction} == {"length": 1, "skill": 3}


def test_transitions_without_an_effort_count_per_direction_only() -> None:
    stats = rates_of([Transition(run="r", lineage="a", generation=1, direction="skill", mutated=frozenset())])
    assert stats.by_direction[0].n == 1 and stats.by_direction_effort == []


def test_skill_edits_of_the_procedural_engine_leave_the_environment_mostly_untouched() -> None:
    """A skill edit keeps its scenario, so its fixtures stay; the rate is measured as the store measures it."""
    counted = changed = 0
    for seed in range(6):
        chain = random_chain(None, 3, seed)
        rng = random.Random(seed)
        for _ in range(2):
            new = mutate(chain, "skill", "low", rng)
            if new is None:
                break
            counted += 1
            mutated = diff_tasks(compose(chain), compose(new)).mutated
            changed += "environment" in mutated
            assert "instruction" in mutated  # the edited step's own section always changes
            chain = new
    assert counted >= 8 and changed / counted < 0.75, (changed, counted)
