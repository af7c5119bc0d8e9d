"""Where a generation's writes go. The loop writes through a Recorder, so one code path serves both executors:

- `StoreRecorder` writes to the lineage store at once (the asyncio executor, in the driver's process);
- `BufferRecorder` keeps the writes as records, for a generation that runs on a worker away from the store;
  the driver alone `replay`s them, in order, the commit last (one transaction, as every commit).

A record's ids (a plan's, a candidate's) are assigned by the store at replay: until then a `Ref` stands in.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from envevo.task import Task
from envevo.trace import Drift
from envevo.trace import measure_drift as measure_task_drift

if TYPE_CHECKING:
    from envevo.store import LineageStore

# The store methods a generation calls; nothing else is written from inside a generation.
Write = Literal["add_plan", "add_candidate", "add_verifier_report", "set_candidate_result", "commit_generation", "add_usage"]


class Recorder(Protocol):
    work_root: Path

    async def write(self, op: Write, *args: Any, **kwargs: Any) -> Any: ...
    def task(self, task_hash: str) -> Task: ...
    def seed_task(self, lineage: str) -> Task: ...
    async def measure_drift(self, lineage: str, task: Task, parent_hash: str | None) -> Drift: ...


class StoreRecorder:
    def __init__(self, store: LineageStore):
        self.store = store
        self.work_root = store.run_dir / "work"

    async def write(self, op: Write, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.store, op), *args, **kwargs)  # off the loop: writes fsync

    def task(self, task_hash: str) -> Task:
        return self.store.load_version_task(task_hash)

    def seed_task(self, lineage: str) -> Task:
        return self.store.load_version_task(self.store.lineage(lineage).seed_hash)

    async def measure_drift(self, lineage: str, task: Task, parent_hash: str | None) -> Drift:
        return await asyncio.to_thread(self.store.measure_drift, lineage, task, parent_hash)


@dataclass(frozen=True)
class Ref:
    """The id the store will give to record number `index` at replay."""

    index: int


@dataclass
class Record:
    op: Write
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass
class BufferRecorder:
    """Records instead of writes, on a worker that has the generation's task files but no store."""

    tasks: dict[str, Task]  # by content hash: the parent version, and the seed (for the drift bound)
    seed_hash: str
    work_root: Path
    records: list[Record] = field(default_factory=list)

    async def write(self, op: Write, *args: Any, **kwargs: Any) -> Any:
        self.records.append(Record(op, args, kwargs))
        return Ref(len(self.records) - 1)

    def task(self, task_hash: str) -> Task:
        return self.tasks[task_hash]

    def seed_task(self, lineage: str) -> Task:
        return self.tasks[self.seed_hash]

    async def measure_drift(self, lineage: str, task: Task, parent_hash: str | None) -> Drift:
        parent = self.tasks[parent_hash] if parent_hash is not None else None
        return await asyncio.to_thread(measure_task_drift, task, self.seed_task(lineage), parent)


def replay(store: LineageStore, records: list[Record]) -> None:
    """Write a remote generation's records into the store, in the order they were made."""
    ids: dict[int, Any] = {}

    def resolve(value: Any) -> Any:
        return ids[value.index] if isinstance(value, Ref) else value

    for i, rec in enumerate(records):
        args = tuple(resolve(a) for a in rec.args)
        kwargs = {k: resolve(v) for k, v in rec.kwargs.items()}
        ids[i] = getattr(store, rec.op)(*args, **kwargs)
