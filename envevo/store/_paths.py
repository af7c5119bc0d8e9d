"""Where a run keeps things on disk."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel


class RunPaths(BaseModel):
    """The layout of one RUN_DIR.

    - ``store.sqlite``: the lineage index (WAL mode; ``-wal``/``-shm`` files sit beside it);
    - ``tasks/<content_hash>/``: immutable task versions, full Harbor task dirs;
    - ``.tmp/``: task dirs being written, renamed into ``tasks/`` when complete;
    - ``run.lock``: flocked by the one ``envevo evolve`` that writes the run (``_lock``).
    """

    run_dir: Path

    @classmethod
    def is_run(cls, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is a run directory: it holds a store."""
        return cls(run_dir=Path(path)).db.is_file()

    @property
    def db(self) -> Path:
        return self.run_dir / "store.sqlite"

    @property
    def lock(self) -> Path:
        return self.run_dir / "run.lock"

    @property
    def tasks(self) -> Path:
        return self.run_dir / "tasks"

    @property
    def tmp(self) -> Path:
        return self.run_dir / ".tmp"

    def task_dir(self, task_hash: str) -> Path:
        return self.tasks / task_hash
