"""Task versions on disk: ``RUN_DIR/tasks/<content_hash>/``, full Harbor task dirs, each written once.

A version is written to ``RUN_DIR/.tmp/``, fsynced, checked against its hash and renamed into ``tasks/`` in one
step, so a directory there is complete and never changes again. Staging dirs carry their writer's pid, so a
later open removes those of writers that died.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from envevo._process import pid_alive
from envevo.errors import TaskError
from envevo.store._models import StoreError
from envevo.store._paths import RunPaths
from envevo.task import Task, dir_hash, load_task, save

_HASH_RE = re.compile(r"^[0-9a-f]{64}$")


class TaskBlobs:
    """The content-addressed task versions of one run directory."""

    def __init__(self, paths: RunPaths, *, durable: bool) -> None:
        self.paths = paths
        self.durable = durable

    def put(self, task: Task) -> str:
        """Store ``task`` as ``tasks/<content_hash>/`` and return the hash. Idempotent; never rewrites a version."""
        task_hash = task.content_hash()
        dest = self.paths.task_dir(task_hash)
        if dest.is_dir():
            return task_hash
        try:
            self.paths.tasks.mkdir(parents=True, exist_ok=True)
            self.paths.tmp.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f"put-{os.getpid()}-", dir=self.paths.tmp))
        except OSError as e:
            raise StoreError(
                f"cannot write task versions under {self.paths.run_dir}: {e.strerror or e}; "
                "check free space and permissions"
            ) from e
        try:
            staged = save(task, staging / "task", validate=False)
            got = dir_hash(staged)
            if got != task_hash:  # pragma: no cover - a bug in save/hash, never expected
                raise StoreError(f"task {task.name} hashed {task_hash[:12]} in memory but {got[:12]} on disk")
            if self.durable:
                _fsync_tree(staged)
            try:
                os.rename(staged, dest)  # atomic; fails if dest exists (another writer stored the same content)
            except OSError as e:
                if not dest.is_dir():
                    raise StoreError(f"cannot store task version {task_hash[:12]}: {e.strerror or e}") from e
            if self.durable:
                _fsync_dir(self.paths.tasks)
        except TaskError as e:
            raise StoreError(f"cannot store task version {task_hash[:12]}: {e}") from e
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return task_hash

    def has(self, task_hash: str) -> bool:
        return bool(_HASH_RE.match(task_hash)) and self.paths.task_dir(task_hash).is_dir()

    def dir(self, task_hash: str) -> Path:
        if not _HASH_RE.match(task_hash):
            raise StoreError(f"{task_hash!r} is not a task content hash (64 lowercase hex digits)")
        path = self.paths.task_dir(task_hash)
        if not path.is_dir():
            raise StoreError(f"task version {task_hash[:12]} is not in {self.paths.tasks}")
        return path

    def load(self, task_hash: str) -> Task:
        return load_task(self.dir(task_hash))

    def clean_tmp(self) -> None:
        """Remove staging dirs left by processes that died mid-write (their pid is in the name)."""
        if not self.paths.tmp.is_dir():
            return
        for entry in self.paths.tmp.iterdir():
            m = re.match(r"put-(\d+)-", entry.name)
            if m and not pid_alive(int(m.group(1))):
                shutil.rmtree(entry, ignore_errors=True)


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
