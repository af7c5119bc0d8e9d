"""What every method group of :class:`~envevo.store.LineageStore` stands on: the run's paths, its SQLite index
and its task versions. The groups (lineages, versions, history, accounting) are mixins over this base; each one
inherits the groups it calls, so its dependencies read off its class line."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from envevo.store._blobs import TaskBlobs
from envevo.store._db import Database
from envevo.store._paths import RunPaths
from envevo.task import Task


class StoreBase:
    def __init__(self, paths: RunPaths, conn: sqlite3.Connection, *, durable: bool = True) -> None:
        self.paths = paths
        self._db = Database(conn, paths.db)
        self._blobs = TaskBlobs(paths, durable=durable)
        # (lineage, generation) -> the try this store instance opened for it
        self._tries: dict[tuple[str, int], int] = {}

    @property
    def run_dir(self) -> Path:
        return self.paths.run_dir

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.tx()

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        return self._db.rows(sql, params)

    # ---- task versions ------------------------------------------------------------------------
    def put_task(self, task: Task) -> str:
        """Store ``task`` as ``tasks/<content_hash>/`` and return the hash. Idempotent; never rewrites a version.

        The task is not validated: every candidate is archived, sound or not (commits validate).
        """
        return self._blobs.put(task)

    def has_task(self, task_hash: str) -> bool:
        return self._blobs.has(task_hash)

    def task_dir(self, task_hash: str) -> Path:
        """The directory of a stored task version (a full Harbor task dir). Do not modify it."""
        return self._blobs.dir(task_hash)

    def load_version_task(self, task_hash: str) -> Task:
        return self._blobs.load(task_hash)
