"""Committed versions of a lineage, the commit point of a generation, and each version's semantic drift."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from envevo.errors import TaskError
from envevo.store._encode import component_list, direction_value, effort_value, l_and_dt, now, to_json
from envevo.store._history import GenerationHistory
from envevo.store._lineages import Lineages
from envevo.store._models import StoreError, Version, VersionCommit
from envevo.task import Task, diff_tasks
from envevo.trace import Difficulty, Direction, Drift, Effort, Trace

#: Versions with their drift (NULL until measured: evolve measures it at the commit, `envevo analyze drift` later).
_VERSION_SQL = "SELECT v.*, d.detail AS drift FROM versions v LEFT JOIN version_drift d ON d.version_id = v.id"


class Versions(Lineages, GenerationHistory):
    def versions(self, lineage_id: str | None = None) -> list[Version]:
        """Committed versions of one lineage (or of all), by lineage then generation."""
        if lineage_id is None:
            rows = self._rows(f"{_VERSION_SQL} JOIN lineages l ON l.id = v.lineage_id ORDER BY l.rowid, v.generation")
        else:
            self.lineage(lineage_id)
            rows = self._rows(f"{_VERSION_SQL} WHERE v.lineage_id = ? ORDER BY v.generation", (lineage_id,))
        return [_version(r) for r in rows]

    def version(self, lineage_id: str, generation: int) -> Version | None:
        rows = self._rows(f"{_VERSION_SQL} WHERE v.lineage_id = ? AND v.generation = ?", (lineage_id, generation))
        return _version(rows[0]) if rows else None

    def latest_version(self, lineage_id: str) -> Version:
        self.lineage(lineage_id)
        rows = self._rows(f"{_VERSION_SQL} WHERE v.lineage_id = ? ORDER BY v.generation DESC LIMIT 1", (lineage_id,))
        return _version(rows[0])

    def next_generation(self, lineage_id: str) -> int:
        """The generation to work on next: one past the last committed one (1 when only the seed exists)."""
        return self.latest_version(lineage_id).generation + 1

    # ---- semantic drift -------------------------------------------------------------------------
    def set_drift(self, lineage_id: str, generation: int, drift: Drift) -> None:
        """Record (or replace) the drift of a committed version."""
        with self._tx() as c:
            row = c.execute(
                "SELECT id FROM versions WHERE lineage_id = ? AND generation = ?", (lineage_id, generation)
            ).fetchone()
            if row is None:
                raise StoreError(f"lineage {lineage_id} has no committed generation {generation}")
            _insert_drift(c, row["id"], drift)

    # ---- the commit point -----------------------------------------------------------------------
    def commit_generation(
        self,
        lineage_id: str,
        generation: int,
        task: Task,
        *,
        direction: Direction | str,
        effort: Effort | str,
        trace: Trace | None = None,
        difficulty: Difficulty | None = None,
        mutated: Iterable[str] | None = None,
        verified: bool,
        parent_hash: str | None = None,
        candidate_id: int | None = None,
        drift: Drift | None = None,
    ) -> Version:
        """:meth:`commit` with the row's fields as arguments (the form most callers and tests use)."""
        return self.commit(VersionCommit(
            lineage_id=lineage_id, generation=generation, task=task, direction=direction, effort=effort,
            trace=trace, difficulty=difficulty, mutated=None if mutated is None else tuple(mutated), verified=verified,
            parent_hash=parent_hash, candidate_id=candidate_id, drift=drift))

    def commit(self, new: VersionCommit) -> Version:
        """THE commit point of a generation: store the task dir, then record the version in one transaction.

        ``new.drift`` (measured by the evolve loop; the store loads no encoder) is recorded in the same transaction;
        without it the version has none until an explicit ``envevo analyze drift`` (:meth:`set_drift`).

        ``generation`` must be :meth:`next_generation`, and ``parent_hash`` (by default taken from the store)
        the hash of generation − 1, so generations stay contiguous and each extends the previous one. The task
        must pass ``Task.check()``. ``mutated`` defaults to the components that differ from the parent.
        Re-committing the identical version is a no-op; anything else already at that generation is an error.

        It blocks on fsyncs: async callers run it with ``await asyncio.to_thread(store.commit_generation, …)``.
        """
        # The row's fields, under the names the checks and the SQL below have always used.
        lineage_id, generation, task, trace, difficulty = new.lineage_id, new.generation, new.task, new.trace, new.difficulty
        mutated, verified, parent_hash, candidate_id, drift = new.mutated, new.verified, new.parent_hash, new.candidate_id, new.drift
        direction_s, effort_s = direction_value(new.direction), effort_value(new.effort)
        if trace is not None and difficulty is not None and trace.L != difficulty.L:
            raise StoreError(
                f"generation {generation} of lineage {lineage_id}: ξ has L={trace.L} but D_T was computed for L={difficulty.L}"
            )
        if generation < 1:
            raise StoreError(
                f"generation {generation}: evolved generations start at 1 (0 is the seed, see create_lineage)"
            )
        try:
            task.check()
        except TaskError as e:
            raise StoreError(f"generation {generation} of lineage {lineage_id} is not a runnable task: {e}") from e
        latest = self.latest_version(lineage_id)
        prev = self.version(lineage_id, generation - 1) if generation - 1 <= latest.generation else None
        parent = parent_hash or (prev or latest).task_hash
        task_hash = self.put_task(task)
        if mutated is None:
            if not self.has_task(parent):
                raise StoreError(f"parent version {parent[:12]} is not in the store; cannot diff against it")
            mutated_list = component_list(diff_tasks(self.load_version_task(parent), task).mutated)
        else:
            mutated_list = component_list(mutated)
        stamp = now()
        with self._tx() as c:
            row = c.execute(
                f"{_VERSION_SQL} WHERE v.lineage_id = ? AND v.generation = ?", (lineage_id, generation)
            ).fetchone()
            if row is not None:
                if row["task_hash"] == task_hash and row["parent_hash"] == parent:
                    return _version(row)
                raise StoreError(
                    f"generation {generation} of lineage {lineage_id} is already committed with another task"
                )
            _check_extends(c, lineage_id, generation, parent)
            if candidate_id is not None:
                _accept_candidate(c, candidate_id, lineage_id, generation, task_hash)
            try_id = self._current_try(c, lineage_id, generation)
            vrow = c.execute(
                "INSERT INTO versions (lineage_id, generation, task_hash, parent_hash, direction, effort, trace, difficulty, "
                "L, D_T, mutated, verified, candidate_id, try_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (
                    lineage_id,
                    generation,
                    task_hash,
                    parent,
                    direction_s,
                    effort_s,
                    to_json(trace),
                    to_json(difficulty),
                    *l_and_dt(trace, difficulty),
                    json.dumps(mutated_list),
                    int(verified),
                    candidate_id,
                    try_id,
                    stamp,
                ),
            ).fetchall()[0]
            if drift is not None:
                _insert_drift(c, vrow["id"], drift)
            c.execute("UPDATE generation_tries SET status = 'committed', finished_at = ? WHERE id = ?", (stamp, try_id))
            c.execute("UPDATE lineages SET updated_at = ? WHERE id = ?", (stamp, lineage_id))
            version = _version(vrow).model_copy(update={"drift": drift})
        self._tries.pop((lineage_id, generation), None)
        return version


def _check_extends(c: sqlite3.Connection, lineage_id: str, generation: int, parent: str) -> None:
    """Generation ``generation`` must come right after the lineage's top one and extend it."""
    top = c.execute(
        "SELECT generation, task_hash FROM versions WHERE lineage_id = ? ORDER BY generation DESC LIMIT 1",
        (lineage_id,),
    ).fetchone()
    if generation != top["generation"] + 1:
        raise StoreError(
            f"cannot commit generation {generation} of lineage {lineage_id}: the next generation is {top['generation'] + 1}"
        )
    if parent != top["task_hash"]:
        raise StoreError(
            f"generation {generation} of lineage {lineage_id} must extend {top['task_hash'][:12]} "
            f"(generation {top['generation']}), not {parent[:12]}"
        )


def _accept_candidate(c: sqlite3.Connection, candidate_id: int, lineage_id: str, generation: int, task_hash: str) -> None:
    cand = c.execute("SELECT lineage_id, generation, task_hash FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
    if cand is None or (cand["lineage_id"], cand["generation"]) != (lineage_id, generation):
        raise StoreError(f"candidate {candidate_id} is not a candidate for generation {generation} of {lineage_id}")
    if cand["task_hash"] != task_hash:
        raise StoreError(f"candidate {candidate_id} holds task {str(cand['task_hash'])[:12]}, not {task_hash[:12]}")
    c.execute("UPDATE candidates SET accepted = 1 WHERE id = ?", (candidate_id,))


def _version(row: sqlite3.Row) -> Version:
    d = dict(row)
    return Version(
        id=d["id"],
        lineage_id=d["lineage_id"],
        generation=d["generation"],
        task_hash=d["task_hash"],
        parent_hash=d["parent_hash"],
        direction=d["direction"],
        effort=d["effort"],
        trace=Trace.model_validate_json(d["trace"]) if d["trace"] else None,
        difficulty=Difficulty.model_validate_json(d["difficulty"]) if d["difficulty"] else None,
        mutated=json.loads(d["mutated"]),
        verified=bool(d["verified"]),
        candidate_id=d["candidate_id"],
        created_at=d["created_at"],
        drift=Drift.model_validate_json(d["drift"]) if d.get("drift") else None,
    )


def _insert_drift(c: sqlite3.Connection, version_id: int, drift: Drift) -> None:
    c.execute(
        "INSERT INTO version_drift (version_id, goal_seed, goal_parent, instruction_seed, instruction_parent, measure, "
        "detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (version_id) DO UPDATE SET "
        "goal_seed = excluded.goal_seed, goal_parent = excluded.goal_parent, instruction_seed = excluded.instruction_seed, "
        "instruction_parent = excluded.instruction_parent, measure = excluded.measure, detail = excluded.detail, "
        "created_at = excluded.created_at",
        (version_id, drift.goal_seed, drift.goal_parent, drift.instruction_seed, drift.instruction_parent,
         drift.measure, drift.model_dump_json(), now()),
    )
