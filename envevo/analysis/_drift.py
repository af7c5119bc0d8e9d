"""Semantic drift of versions stored without it: the explicit analysis step (`envevo analyze drift`).

The evolve loop measures each version's drift when it commits it. Versions of runs made before drift was recorded,
or committed without the encoder, have none; reads (`lineage show`, `report`) say so and never write, and this step
measures and stores what is missing. The store persists `Drift` only: the encoder is called here, not there.
"""

from __future__ import annotations

from collections.abc import Callable

from envevo.store import LineageStore, Version
from envevo.task import Task
from envevo.trace import Drift, measure_drift

#: What measures one version: (task, seed, parent or None) -> Drift; tests pass a stand-in for the encoder.
Measure = Callable[[Task, Task, Task | None], Drift]


def unmeasured(store: LineageStore, lineage_id: str | None = None) -> list[Version]:
    """The committed versions (of one lineage, or of all) that have no drift stored."""
    return [v for v in store.versions(lineage_id) if v.drift is None]


def measure_missing_drift(store: LineageStore, lineage_id: str | None = None, measure: Measure | None = None) -> int:
    """Measure and store the drift of every version that has none; return how many were measured."""
    measure = measure or measure_drift
    todo = unmeasured(store, lineage_id)
    for v in todo:
        seed = store.load_version_task(store.lineage(v.lineage_id).seed_hash)
        parent = store.load_version_task(v.parent_hash) if v.generation > 0 and v.parent_hash else None
        store.set_drift(v.lineage_id, v.generation, measure(store.load_version_task(v.task_hash), seed, parent))
    return len(todo)


def drift_note(missing: int, run: object) -> str:
    """What a read says about versions without drift, naming the step that measures it."""
    return (f"drift not measured for {missing} version(s) (stored before drift was recorded, or without the encoder); "
            f"`envevo analyze drift {run}` measures and stores it")
