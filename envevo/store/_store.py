"""The lineage store: an SQLite index (WAL) over immutable, content-addressed task-version directories.

Crash safety rests on three rules:

1. A task version is written to ``RUN_DIR/.tmp/``, fsynced, checked against its hash and renamed into
   ``RUN_DIR/tasks/<hash>/`` in one step; a directory there is complete and never changes again (``_blobs``).
2. A generation is committed by one short SQLite transaction (``commit_generation``, in ``_versions``) that runs
   only after its task directory is in place. SQLite in WAL mode with ``synchronous=FULL`` makes that
   transaction atomic and durable, even across power loss; ``kill -9`` therefore loses at most the generation in
   flight.
3. Plans and candidates written before a crash belong to a *generation try* that never committed; the next
   try of the same generation marks it abandoned (``_history``). Only ``versions`` rows are committed generations.

One ``LineageStore`` may be shared by many asyncio tasks and threads of one process: every method is a short
transaction behind a lock (``_db``). Writes block on fsyncs, so async code runs them in a worker thread
(``await asyncio.to_thread(store.commit_generation, …)``). Several processes may open the same store; SQLite's
busy timeout serializes their writes.

:class:`LineageStore` is the facade over the method groups: lineages and run config (``_lineages``), versions
and drift (``_versions``), generation history (``_history``), rollouts and usage (``_accounting``).
"""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path

from envevo._home import private_dir
from envevo.errors import TaskError
from envevo.store._accounting import Accounting
from envevo.store._db import connect
from envevo.store._lock import RunLock, is_held
from envevo.store._models import StoreError
from envevo.store._paths import RunPaths
from envevo.store._versions import Versions
from envevo.task import dir_hash


class LineageStore(Versions, Accounting):
    """The lineages of one run directory. Open with :meth:`open`; close (or use as a context manager)."""

    _lock: RunLock | None = None

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, create: bool = True, durable: bool = True,
             hold: str | None = None, migrate: bool | None = None) -> LineageStore:
        """Open the store of ``run_dir``; with ``create`` make the directory and store when missing.

        ``durable=False`` skips fsyncs (tests, scratch runs): still consistent after kill -9, not after
        power loss. ``hold`` (the command, e.g. "envevo evolve") makes this process the run's one writer until
        :meth:`close`, before anything is read or written; another holder makes it refuse, naming that one's PID.
        Readers (``lineage show``, ``report``) do not hold, and leave a store at an older schema as it is (refused,
        naming `envevo lineage upgrade`); ``migrate`` says otherwise (default: a creator or holder migrates).
        """
        paths = RunPaths(run_dir=Path(run_dir).expanduser().absolute())
        root = paths.run_dir
        if root.exists() and not root.is_dir():
            raise StoreError(f"run directory {root} is a file; pass the run dir of `envevo evolve --run`")
        if not create:
            if not root.is_dir():
                raise StoreError(
                    f"run directory {root} does not exist; pass the run dir of `envevo evolve --run`"
                )
            if not paths.db.is_file():
                raise StoreError(
                    f"{root} is not an envevo run (no {paths.db.name} in it); pass the run dir of `envevo evolve --run`"
                )
        else:
            try:
                private_dir(root)  # 0700: task output and trial logs live under it
            except OSError as e:
                raise StoreError(
                    f"cannot create run directory {root}: {e.strerror or e}; check the path and permissions"
                ) from e
        lock = RunLock.acquire(paths.lock, hold) if hold else None
        try:
            upgrade = create or hold is not None if migrate is None else migrate
            store = cls(paths, connect(paths.db, create=create, durable=durable, migrate=upgrade), durable=durable)
        except BaseException:
            if lock:
                lock.release()
            raise
        store._lock = lock
        store._blobs.clean_tmp()
        return store

    def close(self) -> None:
        self._db.close()
        if self._lock:
            self._lock.release()

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def writer_alive(self) -> bool:
        """Whether an `envevo evolve` (or another holder) is writing this run now; this store's own hold counts."""
        return self._lock is not None or is_held(self.paths.lock)

    @property
    def schema_version(self) -> int:
        return self._db.schema_version

    # ---- integrity ------------------------------------------------------------------------------
    def check(self, *, rehash: bool = True) -> list[str]:
        """Problems found (empty when sound): SQLite integrity, foreign keys, contiguous generations, parent
        links, and every committed version's task dir present (and, with ``rehash``, matching its name)."""
        problems = self._db.problems()
        for lin in self.lineages():
            versions = self.versions(lin.id)
            gens = [v.generation for v in versions]
            if gens != list(range(len(gens))):
                problems.append(f"{lin.id}: generations {gens} are not contiguous from 0")
            if versions and versions[0].task_hash != lin.seed_hash:
                problems.append(f"{lin.id}: generation 0 is not the seed")
            for prev, cur in pairwise(versions):
                if cur.parent_hash != prev.task_hash:
                    problems.append(
                        f"{lin.id}: generation {cur.generation} does not extend generation {prev.generation}"
                    )
            for v in versions:
                path = self.paths.task_dir(v.task_hash)
                if not path.is_dir():
                    problems.append(f"{lin.id}: task dir of generation {v.generation} ({v.task_hash[:12]}) is missing")
                elif rehash:
                    try:
                        got = dir_hash(path)
                    except TaskError as e:
                        problems.append(f"{lin.id}: task dir of generation {v.generation} is unreadable: {e}")
                        continue
                    if got != v.task_hash:
                        problems.append(
                            f"{lin.id}: task dir {v.task_hash[:12]} of generation {v.generation} hashes to {got[:12]}"
                        )
        return problems
