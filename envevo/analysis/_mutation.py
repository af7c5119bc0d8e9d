"""Mutation rates per generation and component: the paper's Figure 4 quantities.

For generation g ≥ 1 and component c, the rate is the fraction of lineages having a version at g whose
component c changed from g−1 to g. Rates are also pooled per direction, and per (direction, effort): the
paper's Figure 4 compares directions at one effort. The total mutation rate counts a lineage when any of instruction,
environment or verification changed (the solution follows from those; config is bookkeeping).

A component counts as mutated when any one of its files changed, so an engine whose every edit touches each
component a little reads 1.00 everywhere. `kept` is the finer residue: of the child's files in a component, the
share byte-identical to the parent's (pooled over files).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from envevo.store import LineageStore
from envevo.task import Task, files_kept

#: Components reported, in order.
RATE_COMPONENTS: tuple[str, ...] = ("instruction", "environment", "verification", "solution")
#: Components whose change counts towards the total mutation rate.
TOTAL_COMPONENTS: tuple[str, ...] = ("instruction", "environment", "verification")
_EFFORT_ORDER = {"low": 0, "high": 1, "max": 2}


class Transition(BaseModel):
    """One committed step g−1 → g of one lineage."""

    run: str
    lineage: str
    generation: int
    direction: str | None = None
    effort: str | None = None
    mutated: frozenset[str] = frozenset()
    files: dict[str, tuple[int, int]] = Field(default_factory=dict,
                                              description="component -> (files identical to the parent's, files)")


class Rates(BaseModel):
    n: int = Field(description="lineages (transitions) counted")
    rates: dict[str, float] = Field(description="component -> fraction mutated")
    total: float = Field(description="fraction where instruction, environment or verification changed")
    kept: dict[str, float | None] = Field(default_factory=dict, description="component -> share of the children's "
                                          "files byte-identical to their parent's (None: no such files)")


class GenerationRates(Rates):
    generation: int


class DirectionRates(Rates):
    direction: str


class DirectionEffortRates(Rates):
    direction: str
    effort: str


class MutationStats(BaseModel):
    runs: list[str]
    lineages: int
    generations: list[GenerationRates] = Field(description="one row per generation g ≥ 1 that any lineage reached")
    mean: dict[str, float | None] = Field(description="per-component rate averaged over generations")
    mean_total: float | None = None
    by_direction: list[DirectionRates] = Field(default_factory=list, description="pooled over generations")
    by_direction_effort: list[DirectionEffortRates] = Field(
        default_factory=list, description="pooled over generations, one row per (direction, effort)"
    )


def _rates(group: Sequence[Transition]) -> dict:
    n = len(group)
    kept: dict[str, float | None] = {}
    for c in RATE_COMPONENTS:
        same, files = (sum(t.files.get(c, (0, 0))[i] for t in group) for i in (0, 1))
        kept[c] = same / files if files else None
    return {"n": n, "rates": {c: sum(c in t.mutated for t in group) / n for c in RATE_COMPONENTS},
            "total": sum(any(c in t.mutated for c in TOTAL_COMPONENTS) for t in group) / n, "kept": kept}


def rates_of(transitions: Iterable[Transition], runs: Sequence[str] = ()) -> MutationStats:
    """Mutation rates of a set of transitions (pure; :func:`mutation_rates` reads them from stores)."""
    items = list(transitions)
    by_gen: dict[int, list[Transition]] = defaultdict(list)
    by_dir: dict[str, list[Transition]] = defaultdict(list)
    by_dir_effort: dict[tuple[str, str], list[Transition]] = defaultdict(list)
    for t in items:
        by_gen[t.generation].append(t)
        if t.direction:
            by_dir[t.direction].append(t)
            if t.effort:
                by_dir_effort[(t.direction, t.effort)].append(t)
    generations = [GenerationRates(generation=g, **_rates(by_gen[g])) for g in sorted(by_gen)]
    directions = [DirectionRates(direction=d, **_rates(by_dir[d])) for d in sorted(by_dir)]
    per_effort = [DirectionEffortRates(direction=d, effort=e, **_rates(group)) for (d, e), group in
                  sorted(by_dir_effort.items(), key=lambda kv: (kv[0][0], _EFFORT_ORDER.get(kv[0][1], 9)))]
    if generations:
        mean: dict[str, float | None] = {
            c: sum(g.rates[c] for g in generations) / len(generations) for c in RATE_COMPONENTS
        }
        mean_total: float | None = sum(g.total for g in generations) / len(generations)
    else:
        mean, mean_total = dict.fromkeys(RATE_COMPONENTS), None
    return MutationStats(
        runs=list(runs),
        lineages=len({(t.run, t.lineage) for t in items}),
        generations=generations,
        mean=mean,
        mean_total=mean_total,
        by_direction=directions,
        by_direction_effort=per_effort,
    )


def transitions(store: LineageStore) -> list[Transition]:
    run = str(store.run_dir)
    tasks: dict[str, Task] = {}

    def task(task_hash: str) -> Task:
        if task_hash not in tasks:
            tasks[task_hash] = store.load_version_task(task_hash)
        return tasks[task_hash]

    return [
        Transition(
            run=run, lineage=v.lineage_id, generation=v.generation, direction=v.direction, effort=v.effort,
            mutated=frozenset(v.mutated),
            files=files_kept(task(v.parent_hash), task(v.task_hash)) if v.parent_hash else {},
        )
        for v in store.versions()
        if v.generation >= 1
    ]


def mutation_rates(runs: Iterable[LineageStore | str | os.PathLike[str]]) -> MutationStats:
    """Mutation rates across the lineages of one or more runs (stores, or RUN_DIR paths)."""
    collected: list[Transition] = []
    names: list[str] = []
    for run in runs:
        if isinstance(run, LineageStore):
            collected.extend(transitions(run))
            names.append(str(run.run_dir))
        else:
            with LineageStore.open(Path(run), create=False) as store:
                collected.extend(transitions(store))
                names.append(str(store.run_dir))
    return rates_of(collected, names)
