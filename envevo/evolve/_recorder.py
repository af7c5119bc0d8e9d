"""Where a generation's writes go. The loop writes through a Recorder, so one code path serves both executors:

- `StoreRecorder` writes to the lineage store at once (the asyncio executor, in the driver's process);
- `BufferRecorder` keeps the writes as records, for a generation that runs on a worker away from the store;
  the driver alone `replay`s them, in order, the commit last (one transaction, as every commit).

A Recorder has one typed method per store write a generation makes, and a record is a small pydantic model per
write (`Record`, a union tagged by `op`). Replay accepts only those models: a buffer holding anything else is
refused before the store is touched. A record's ids (a plan's, a candidate's) are assigned by the store at replay:
until then a `Ref` stands in, so a Recorder is generic in its id type (`int` next to the store, `Ref` in a buffer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from envevo.evolve._engine import Proposal, Review
from envevo.store import StoreError, Version, VersionCommit
from envevo.task import Task
from envevo.trace import Drift
from envevo.trace import measure_drift as measure_task_drift
from envevo.verify import VerifierReport, spec_of

if TYPE_CHECKING:
    from envevo.store import LineageStore


class Recorder[I](Protocol):
    """The writes a generation makes (the store's methods of the same names), and the reads it needs. `I` is the
    id the recorder hands back for a plan or a candidate, to name it in the writes that follow."""

    work_root: Path

    async def add_plan(self, lineage_id: str, generation: int, direction: str, attempt: int, proposal: Proposal | None,
                       review: Review | None, *, accepted: bool | None = None, feedback: str | None = None) -> I: ...

    async def add_candidate(self, lineage_id: str, generation: int, direction: str, attempt: int, task: Task | None,
                            *, plan_id: I, accepted: bool = False, reasons: Sequence[str] = ()) -> I: ...

    async def add_verifier_report(self, candidate_id: I, report: VerifierReport, *,
                                  wall_seconds: float | None = None) -> None: ...

    async def set_candidate_result(self, candidate_id: I, accepted: bool, reasons: Sequence[str] = ()) -> None: ...

    async def commit_generation(self, version: VersionCommit, *, candidate_id: I) -> None:
        """The commit point (the store's `commit`): `version`, made by the accepted candidate `candidate_id`."""
        ...

    def task(self, task_hash: str) -> Task: ...

    def seed_task(self, lineage: str) -> Task: ...

    async def measure_drift(self, lineage: str, task: Task, parent_hash: str | None) -> Drift: ...

    async def mutant_kills(self, parent: Version) -> frozenset[str]:
        """The parent keys its children reuse, read from the parent's accepted candidate's stored reports: the keys
        of the mutants it killed, and its red team's certified resisted keys, each with the generation and trial it
        came from (`envevo.verify.resisted_sources`). Read from the store, so a resumed lineage reuses the same."""
        ...


class StoreRecorder:
    """Writes straight to the store, each write off the event loop (a write fsyncs)."""

    def __init__(self, store: LineageStore):
        self.store = store
        self.work_root = store.run_dir / "work"

    async def add_plan(self, lineage_id: str, generation: int, direction: str, attempt: int, proposal: Proposal | None,
                       review: Review | None, *, accepted: bool | None = None, feedback: str | None = None) -> int:
        return await asyncio.to_thread(self.store.add_plan, lineage_id, generation, direction, attempt, proposal, review,
                                       accepted=accepted, feedback=feedback)

    async def add_candidate(self, lineage_id: str, generation: int, direction: str, attempt: int, task: Task | None,
                            *, plan_id: int, accepted: bool = False, reasons: Sequence[str] = ()) -> int:
        return await asyncio.to_thread(self.store.add_candidate, lineage_id, generation, direction, attempt, task,
                                       plan_id=plan_id, accepted=accepted, reasons=reasons)

    async def add_verifier_report(self, candidate_id: int, report: VerifierReport, *,
                                  wall_seconds: float | None = None) -> None:
        await asyncio.to_thread(self.store.add_verifier_report, candidate_id, report, wall_seconds=wall_seconds)

    async def set_candidate_result(self, candidate_id: int, accepted: bool, reasons: Sequence[str] = ()) -> None:
        await asyncio.to_thread(self.store.set_candidate_result, candidate_id, accepted, reasons)

    async def commit_generation(self, version: VersionCommit, *, candidate_id: int) -> None:
        await asyncio.to_thread(self.store.commit, version.model_copy(update={"candidate_id": candidate_id}))

    def task(self, task_hash: str) -> Task:
        return self.store.load_version_task(task_hash)

    def seed_task(self, lineage: str) -> Task:
        return self.store.load_version_task(self.store.lineage(lineage).seed_hash)

    async def measure_drift(self, lineage: str, task: Task, parent_hash: str | None) -> Drift:
        def measure() -> Drift:  # reads task dirs and runs the encoder: all of it off the event loop
            parent = self.task(parent_hash) if parent_hash is not None else None
            return measure_task_drift(task, self.seed_task(lineage), parent)

        return await asyncio.to_thread(measure)

    async def mutant_kills(self, parent: Version) -> frozenset[str]:
        if parent.candidate_id is None:  # a seed: its gate verified it, as no candidate of this run
            return frozenset()
        rows = await asyncio.to_thread(self.store.verifications, parent.candidate_id)
        # Each verifier that reuses its parent's verdicts says which keys its stored report holds (its spec).
        return frozenset().union(*(spec.load(spec.inherits)(v.metrics, parent.generation) for v in rows
                                   if (spec := spec_of(v.verifier)) is not None and spec.inherits is not None))


class Ref(BaseModel):
    """The id the store will give to the row that record number `index` writes, at replay."""

    model_config = ConfigDict(frozen=True)

    index: int


# The records: one model per store write, its fields the write's arguments. `Row` resolves a Ref at replay.
Row = Callable[[Ref], int]


class _Write(BaseModel):
    model_config = ConfigDict(frozen=True)


class AddPlan(_Write):
    op: Literal["add_plan"] = "add_plan"
    lineage_id: str
    generation: int
    direction: str
    attempt: int
    proposal: Proposal | None
    review: Review | None
    accepted: bool | None = None
    feedback: str | None = None

    def apply(self, store: LineageStore, row: Row) -> int:
        return store.add_plan(self.lineage_id, self.generation, self.direction, self.attempt, self.proposal, self.review,
                              accepted=self.accepted, feedback=self.feedback)


class AddCandidate(_Write):
    op: Literal["add_candidate"] = "add_candidate"
    lineage_id: str
    generation: int
    direction: str
    attempt: int
    task: Task | None
    plan_id: Ref
    accepted: bool = False
    reasons: tuple[str, ...] = ()

    def apply(self, store: LineageStore, row: Row) -> int:
        return store.add_candidate(self.lineage_id, self.generation, self.direction, self.attempt, self.task,
                                   plan_id=row(self.plan_id), accepted=self.accepted, reasons=self.reasons)


class AddVerifierReport(_Write):
    op: Literal["add_verifier_report"] = "add_verifier_report"
    candidate_id: Ref
    report: VerifierReport
    wall_seconds: float | None = None

    def apply(self, store: LineageStore, row: Row) -> None:
        store.add_verifier_report(row(self.candidate_id), self.report, wall_seconds=self.wall_seconds)


class SetCandidateResult(_Write):
    op: Literal["set_candidate_result"] = "set_candidate_result"
    candidate_id: Ref
    accepted: bool
    reasons: tuple[str, ...] = ()

    def apply(self, store: LineageStore, row: Row) -> None:
        store.set_candidate_result(row(self.candidate_id), self.accepted, self.reasons)


class CommitGeneration(_Write):
    op: Literal["commit_generation"] = "commit_generation"
    version: VersionCommit  # its candidate_id is the store's id for `candidate_id`, known at replay
    candidate_id: Ref

    def apply(self, store: LineageStore, row: Row) -> None:
        store.commit(self.version.model_copy(update={"candidate_id": row(self.candidate_id)}))


class AddUsage(_Write):
    """An LLM engine's spending on the worker (its meter's `on_usage`, which next to the store writes the row)."""

    op: Literal["add_usage"] = "add_usage"
    role: str
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    cost_usd: float | None = None
    lineage_id: str | None = None
    generation: int | None = None

    def apply(self, store: LineageStore, row: Row) -> None:
        store.add_usage(self.role, input_tokens=self.input_tokens, output_tokens=self.output_tokens, model=self.model,
                        cost_usd=self.cost_usd, lineage_id=self.lineage_id, generation=self.generation)


Record = Annotated[
    AddPlan | AddCandidate | AddVerifierReport | SetCandidateResult | CommitGeneration | AddUsage,
    Field(discriminator="op"),
]
_RECORDS: TypeAdapter[list[Record]] = TypeAdapter(list[Record])


@dataclass
class BufferRecorder:
    """Records instead of writes, on a worker that has the generation's task files but no store."""

    tasks: dict[str, Task]  # by content hash: the parent version, and the seed (for the drift bound)
    seed_hash: str
    work_root: Path
    records: list[Record] = field(default_factory=list)
    kills: frozenset[str] = frozenset()  # the parent keys (killed mutants, resisted exploits), read by the driver

    def _keep(self, record: Record) -> Ref:
        self.records.append(record)
        return Ref(index=len(self.records) - 1)

    async def add_plan(self, lineage_id: str, generation: int, direction: str, attempt: int, proposal: Proposal | None,
                       review: Review | None, *, accepted: bool | None = None, feedback: str | None = None) -> Ref:
        return self._keep(AddPlan(lineage_id=lineage_id, generation=generation, direction=direction, attempt=attempt,
                                  proposal=proposal, review=review, accepted=accepted, feedback=feedback))

    async def add_candidate(self, lineage_id: str, generation: int, direction: str, attempt: int, task: Task | None,
                            *, plan_id: Ref, accepted: bool = False, reasons: Sequence[str] = ()) -> Ref:
        return self._keep(AddCandidate(lineage_id=lineage_id, generation=generation, direction=direction,
                                       attempt=attempt, task=task, plan_id=plan_id, accepted=accepted,
                                       reasons=tuple(reasons)))

    async def add_verifier_report(self, candidate_id: Ref, report: VerifierReport, *,
                                  wall_seconds: float | None = None) -> None:
        self._keep(AddVerifierReport(candidate_id=candidate_id, report=report, wall_seconds=wall_seconds))

    async def set_candidate_result(self, candidate_id: Ref, accepted: bool, reasons: Sequence[str] = ()) -> None:
        self._keep(SetCandidateResult(candidate_id=candidate_id, accepted=accepted, reasons=tuple(reasons)))

    async def commit_generation(self, version: VersionCommit, *, candidate_id: Ref) -> None:
        self._keep(CommitGeneration(version=version, candidate_id=candidate_id))

    def add_usage(self, role: str, *, input_tokens: int = 0, output_tokens: int = 0, model: str | None = None,
                  cost_usd: float | None = None, lineage_id: str | None = None, generation: int | None = None) -> None:
        """Not awaited: a meter reports usage from a plain callback."""
        self._keep(AddUsage(role=role, input_tokens=input_tokens, output_tokens=output_tokens, model=model,
                            cost_usd=cost_usd, lineage_id=lineage_id, generation=generation))

    def task(self, task_hash: str) -> Task:
        return self.tasks[task_hash]

    def seed_task(self, lineage: str) -> Task:
        return self.tasks[self.seed_hash]

    async def measure_drift(self, lineage: str, task: Task, parent_hash: str | None) -> Drift:
        parent = self.tasks[parent_hash] if parent_hash is not None else None
        return await asyncio.to_thread(measure_task_drift, task, self.seed_task(lineage), parent)

    async def mutant_kills(self, parent: Version) -> frozenset[str]:
        return self.kills


def checked(records: Sequence[object]) -> list[Record]:
    """The records, if each is one of the writes above; a buffer holding anything else is refused whole."""
    try:
        return _RECORDS.validate_python(list(records))
    except ValidationError as e:
        raise StoreError(f"a generation's records hold a write the driver does not replay: {e}") from None


def replay(store: LineageStore, records: Sequence[object]) -> None:
    """Write a remote generation's records into the store, in the order they were made."""
    rows: dict[int, int] = {}

    def row(ref: Ref) -> int:
        if ref.index not in rows:
            raise StoreError(f"a record refers to record {ref.index}, which wrote no plan or candidate before it")
        return rows[ref.index]

    for i, record in enumerate(checked(records)):
        made = record.apply(store, row)
        if made is not None:
            rows[i] = made
