"""The run's settings and its lineages: one per seed, created with the seed as generation 0."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from envevo.errors import TaskError
from envevo.store._base import StoreBase
from envevo.store._encode import json_default, l_and_dt, now, to_json
from envevo.store._models import Lineage, LineageStatus, StoreError
from envevo.task import Task
from envevo.trace import Difficulty, Trace

_LINEAGE_SQL = (
    "SELECT l.*, (SELECT MAX(generation) FROM versions v WHERE v.lineage_id = l.id) AS latest_generation "
    "FROM lineages l"
)


def slugify(name: str) -> str:
    """A file-name-safe lineage id from a seed name: its last path part, other characters replaced by '-'."""
    base = name.strip().rstrip("/").rsplit("/", 1)[-1]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip(".-_")
    return slug or "seed"


class Lineages(StoreBase):
    # ---- run config ---------------------------------------------------------------------------
    def set_run_config(self, config: Mapping[str, object]) -> None:
        """Record the run's settings (engine, effort, generations, seed, …), replacing earlier ones."""
        stamp = now()
        text = json.dumps(dict(config), default=json_default, sort_keys=True)
        with self._tx() as c:
            c.execute(
                "INSERT INTO run (id, config, created_at, updated_at) VALUES (1, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
                (text, stamp, stamp),
            )

    def run_config(self) -> dict[str, Any] | None:
        rows = self._rows("SELECT config FROM run WHERE id = 1")
        return json.loads(rows[0]["config"]) if rows else None

    # ---- lineages -----------------------------------------------------------------------------
    def create_lineage(
        self,
        seed_name: str,
        seed_task: Task,
        *,
        trace: Trace | None = None,
        difficulty: Difficulty | None = None,
        verified: bool = False,
    ) -> str:
        """Start a lineage from a seed (stored as its generation-0 version); return the lineage id.

        Idempotent by seed name, for resume: the same name and seed return the existing lineage (filling in
        ``trace``/``difficulty`` of generation 0 if they were missing, and marking it ``verified`` once a seed gate
        passed). The same name with a different seed is an error.
        """
        if not seed_name.strip():
            raise StoreError("a seed name must not be empty")
        seed_hash = seed_task.content_hash()
        if self._lineage_by_seed(seed_name) is None:
            try:
                seed_task.check()
            except TaskError as e:
                raise StoreError(f"seed {seed_name!r} is not a runnable task: {e}") from e
            self.put_task(seed_task)
        stamp = now()
        with self._tx() as c:
            row = c.execute("SELECT id, seed_hash FROM lineages WHERE seed_name = ?", (seed_name,)).fetchone()
            if row is not None:
                if row["seed_hash"] != seed_hash:
                    raise StoreError(
                        f"run {self.run_dir} already has a lineage for seed {seed_name!r} from a different seed task "
                        f"({row['seed_hash'][:12]} there, {seed_hash[:12]} now); resume with the same seed or use a new --run"
                    )
                lineage_id: str = row["id"]
                if trace is not None or difficulty is not None or verified:
                    c.execute(
                        "UPDATE versions SET trace = COALESCE(trace, ?), difficulty = COALESCE(difficulty, ?), "
                        "L = COALESCE(L, ?), D_T = COALESCE(D_T, ?), verified = MAX(verified, ?) "
                        "WHERE lineage_id = ? AND generation = 0",
                        (to_json(trace), to_json(difficulty), *l_and_dt(trace, difficulty), int(verified), lineage_id),
                    )
                return lineage_id
            lineage_id = base = slugify(seed_name)
            n = 1
            while c.execute("SELECT 1 FROM lineages WHERE id = ?", (lineage_id,)).fetchone():
                n += 1
                lineage_id = f"{base}-{n}"
            c.execute(
                "INSERT INTO lineages (id, seed_name, seed_hash, status, created_at, updated_at) VALUES (?, ?, ?, 'running', ?, ?)",
                (lineage_id, seed_name, seed_hash, stamp, stamp),
            )
            try_id = c.execute(
                "INSERT INTO generation_tries (lineage_id, generation, status, pid, started_at, finished_at) "
                "VALUES (?, 0, 'committed', ?, ?, ?) RETURNING id",
                (lineage_id, os.getpid(), stamp, stamp),
            ).fetchall()[0][0]
            c.execute(
                "INSERT INTO versions (lineage_id, generation, task_hash, parent_hash, trace, difficulty, L, D_T, mutated, "
                "verified, try_id, created_at) VALUES (?, 0, ?, NULL, ?, ?, ?, ?, '[]', ?, ?, ?)",
                (
                    lineage_id,
                    seed_hash,
                    to_json(trace),
                    to_json(difficulty),
                    *l_and_dt(trace, difficulty),
                    int(verified),
                    try_id,
                    stamp,
                ),
            )
        return lineage_id

    def _lineage_by_seed(self, seed_name: str) -> str | None:
        rows = self._rows("SELECT id FROM lineages WHERE seed_name = ?", (seed_name,))
        return rows[0]["id"] if rows else None

    def lineages(self, status: LineageStatus | str | None = None) -> list[Lineage]:
        """All lineages in creation order, optionally only those with ``status``."""
        if status is None:
            rows = self._rows(f"{_LINEAGE_SQL} ORDER BY l.rowid")
        else:
            rows = self._rows(f"{_LINEAGE_SQL} WHERE l.status = ? ORDER BY l.rowid", (LineageStatus(status).value,))
        return [Lineage(**dict(r)) for r in rows]

    def lineage(self, lineage_id: str) -> Lineage:
        rows = self._rows(f"{_LINEAGE_SQL} WHERE l.id = ?", (lineage_id,))
        if not rows:
            known = ", ".join(lin.id for lin in self.lineages()) or "none"
            raise StoreError(f"run {self.run_dir} has no lineage {lineage_id!r} (lineages: {known})")
        return Lineage(**dict(rows[0]))

    def finish_lineage(self, lineage_id: str, status: LineageStatus | str, reason: str | None = None) -> None:
        """Set a lineage's status and reason. Ending it marks its in-flight generation try as failed.

        Setting ``running`` again reopens a lineage (e.g. a resume asking for more generations).
        """
        status = LineageStatus(status)
        self.lineage(lineage_id)
        stamp = now()
        with self._tx() as c:
            c.execute(
                "UPDATE lineages SET status = ?, reason = ?, updated_at = ? WHERE id = ?",
                (status.value, reason, stamp, lineage_id),
            )
            if status is not LineageStatus.RUNNING:
                c.execute(
                    "UPDATE generation_tries SET status = 'failed', finished_at = ? WHERE lineage_id = ? AND status = 'open'",
                    (stamp, lineage_id),
                )
