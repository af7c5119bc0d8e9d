"""Generation history: tries, plans, candidates and verifications.

Every plan and candidate belongs to a *generation try*. A process killed mid-generation leaves its try open; the
next try of the same generation marks it abandoned, so rows of an unfinished generation stay as history and are
never taken for a committed version (only ``versions`` rows are).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

from envevo.store._base import StoreBase
from envevo.store._encode import as_dict, direction_value, from_json, now, to_json
from envevo.store._models import Candidate, GenerationTry, Plan, StoreError, TryStatus, Verification
from envevo.task import Task
from envevo.trace import Direction
from envevo.verify import VerifierReport


class GenerationHistory(StoreBase):
    def start_generation(self, lineage_id: str, generation: int) -> int:
        """Open a try at ``generation`` (abandoning tries left open by a dead process); return its id.

        Optional: :meth:`add_plan` and :meth:`add_candidate` open one on first use.
        """
        with self._tx() as c:
            return self._current_try(c, lineage_id, generation, fresh=True)

    def _current_try(self, c: sqlite3.Connection, lineage_id: str, generation: int, *, fresh: bool = False) -> int:
        """The open try of this store instance at ``generation``, or a new one (inside the caller's transaction)."""
        key = (lineage_id, generation)
        known = self._tries.get(key)
        if known is not None and not fresh:
            row = c.execute("SELECT status FROM generation_tries WHERE id = ?", (known,)).fetchone()
            if row is not None and row["status"] == TryStatus.OPEN:
                return known
        top = c.execute("SELECT MAX(generation) FROM versions WHERE lineage_id = ?", (lineage_id,)).fetchall()[0][0]
        if top is None:
            raise StoreError(f"run {self.run_dir} has no lineage {lineage_id!r}")
        if generation != top + 1:
            raise StoreError(
                f"generation {generation} of lineage {lineage_id} is not in flight: the next generation is {top + 1}"
            )
        started = now()
        c.execute(
            "UPDATE generation_tries SET status = 'abandoned', finished_at = ? "
            "WHERE lineage_id = ? AND generation = ? AND status = 'open'",
            (started, lineage_id, generation),
        )
        try_id = int(c.execute(
            "INSERT INTO generation_tries (lineage_id, generation, status, pid, started_at) VALUES (?, ?, 'open', ?, ?) RETURNING id",
            (lineage_id, generation, os.getpid(), started),
        ).fetchall()[0][0])
        self._tries[key] = try_id
        return try_id

    def tries(self, lineage_id: str, generation: int | None = None) -> list[GenerationTry]:
        return [GenerationTry(**dict(r)) for r in self._attempt_rows("generation_tries", lineage_id, generation)]

    def _attempt_rows(self, table: str, lineage_id: str, generation: int | None) -> list[sqlite3.Row]:
        sql = f"SELECT * FROM {table} WHERE lineage_id = ?"
        params: list[object] = [lineage_id]
        if generation is not None:
            sql, params = sql + " AND generation = ?", [*params, generation]
        return self._rows(sql + " ORDER BY id", params)

    def _insert_attempt(
        self, table: str, lineage_id: str, generation: int, direction: str, attempt: int, **columns: object
    ) -> int:
        """Insert a plan or candidate row into the current try of its generation; return the row's id."""
        with self._tx() as c:
            row = {
                "try_id": self._current_try(c, lineage_id, generation),
                "lineage_id": lineage_id,
                "generation": generation,
                "direction": direction,
                "attempt": attempt,
                **columns,
                "created_at": now(),
            }
            sql = f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))}) RETURNING id"
            return int(c.execute(sql, tuple(row.values())).fetchall()[0][0])

    def add_plan(
        self,
        lineage_id: str,
        generation: int,
        direction: Direction | str,
        attempt: int,
        proposal: BaseModel | Mapping[str, object] | None,
        review: BaseModel | Mapping[str, object] | None,
        *,
        accepted: bool | None = None,
        feedback: str | None = None,
    ) -> int:
        """Record one Proposer/Reviewer round. ``proposal``/``review`` are the pydantic models (or dicts).

        ``accepted`` defaults to the review's verdict (False without a review).
        """
        direction_s = direction_value(direction)
        review_d = as_dict(review)
        if accepted is None:
            accepted = bool(review_d.get("accepted")) if isinstance(review_d, dict) else False
        if feedback is None and isinstance(review_d, dict):
            feedback = review_d.get("feedback") or None
        return self._insert_attempt(
            "plans", lineage_id, generation, direction_s, attempt,
            proposal=to_json(as_dict(proposal)), review=to_json(review_d), accepted=int(accepted), feedback=feedback,
        )

    def plans(self, lineage_id: str, generation: int | None = None) -> list[Plan]:
        return [
            Plan(
                **{
                    **dict(r),
                    "proposal": from_json(r["proposal"]),
                    "review": from_json(r["review"]),
                    "accepted": bool(r["accepted"]),
                }
            )
            for r in self._attempt_rows("plans", lineage_id, generation)
        ]

    def add_candidate(
        self,
        lineage_id: str,
        generation: int,
        direction: Direction | str,
        attempt: int,
        task: Task | None = None,
        *,
        plan_id: int | None = None,
        accepted: bool = False,
        reasons: Iterable[str] = (),
    ) -> int:
        """Record a candidate (its task is archived under tasks/, sound or not); return its id.

        Record verdicts with :meth:`add_verification`, the outcome with :meth:`set_candidate_result`.
        """
        direction_s = direction_value(direction)
        task_hash = self.put_task(task) if task is not None else None
        return self._insert_attempt(
            "candidates", lineage_id, generation, direction_s, attempt,
            plan_id=plan_id, task_hash=task_hash, accepted=int(accepted), reasons=json.dumps(list(reasons)),
        )

    def set_candidate_result(self, candidate_id: int, accepted: bool, reasons: Iterable[str] = ()) -> None:
        with self._tx() as c:
            cur = c.execute(
                "UPDATE candidates SET accepted = ?, reasons = ? WHERE id = ?",
                (int(accepted), json.dumps(list(reasons)), candidate_id),
            )
            if cur.rowcount != 1:
                raise StoreError(f"no candidate {candidate_id}")

    def candidates(self, lineage_id: str, generation: int | None = None) -> list[Candidate]:
        return [
            Candidate(**{**dict(r), "reasons": json.loads(r["reasons"]), "accepted": bool(r["accepted"])})
            for r in self._attempt_rows("candidates", lineage_id, generation)
        ]

    def add_verification(
        self,
        candidate_id: int,
        verifier: str,
        passed: bool,
        reasons: Iterable[str] = (),
        runs: Iterable[BaseModel | Mapping[str, object]] = (),
        *,
        inconclusive: bool = False,
        notes: Iterable[str] = (),
        metrics: Mapping[str, object] | None = None,
        findings: Iterable[BaseModel | Mapping[str, object]] = (),
        wall_seconds: float | None = None,
    ) -> int:
        """Record one verifier's verdict on a candidate; ``runs`` are TrialOutcome models (or dicts), ``findings``
        ``envevo.verify.Finding`` models (or dicts)."""
        return self._db.insert(
            "INSERT INTO verifications (candidate_id, verifier, passed, inconclusive, reasons, notes, metrics, findings, "
            "runs, wall_seconds, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                candidate_id,
                verifier,
                int(passed),
                int(inconclusive and not passed),
                json.dumps(list(reasons)),
                json.dumps(list(notes)),
                json.dumps(metrics or {}, default=str),
                json.dumps([as_dict(f) for f in findings]),
                json.dumps([as_dict(r) for r in runs]),
                wall_seconds,
                now(),
            ),
            missing=f"no candidate {candidate_id}",
        )

    def add_verifier_report(self, candidate_id: int, report: VerifierReport, *, wall_seconds: float | None = None) -> int:
        """Record an ``envevo.verify.VerifierReport``: name, passed, inconclusive, reasons, notes, metrics, findings,
        runs."""
        return self.add_verification(
            candidate_id, report.name, report.passed, report.reasons, report.runs, inconclusive=report.inconclusive,
            notes=report.notes, metrics=report.metrics, findings=report.findings, wall_seconds=wall_seconds,
        )

    def verifications(self, candidate_id: int) -> list[Verification]:
        rows = self._rows("SELECT * FROM verifications WHERE candidate_id = ? ORDER BY id", (candidate_id,))
        return [
            Verification(
                **{
                    **dict(r),
                    "passed": bool(r["passed"]),
                    "inconclusive": bool(r["inconclusive"]),
                    "reasons": json.loads(r["reasons"]),
                    "notes": json.loads(r["notes"]),
                    "metrics": json.loads(r["metrics"]),
                    "findings": json.loads(r["findings"]),
                    "runs": json.loads(r["runs"]),
                }
            )
            for r in rows
        ]
