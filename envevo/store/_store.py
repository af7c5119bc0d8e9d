"""The lineage store: an SQLite index (WAL) over immutable, content-addressed task-version directories.

Crash safety rests on three rules:

1. A task version is written to ``RUN_DIR/.tmp/``, fsynced, checked against its hash and renamed into
   ``RUN_DIR/tasks/<hash>/`` in one step; a directory there is complete and never changes again.
2. A generation is committed by one short SQLite transaction (``commit_generation``) that runs only after
   its task directory is in place. SQLite in WAL mode with ``synchronous=FULL`` makes that transaction
   atomic and durable, even across power loss; ``kill -9`` therefore loses at most the generation in flight.
3. Plans and candidates written before a crash belong to a *generation try* that never committed; the next
   try of the same generation marks it abandoned. Only ``versions`` rows are committed generations.

One ``LineageStore`` may be shared by many asyncio tasks (or threads) of one process: every method is a
short transaction behind a lock. Several processes may open the same store; SQLite's busy timeout
serializes their writes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envevo._process import pid_alive
from envevo.errors import TaskError
from envevo.store._models import (
    Candidate,
    GenerationTry,
    Lineage,
    LineageStatus,
    Plan,
    Rollout,
    StoreError,
    TryStatus,
    Usage,
    UsageTotal,
    Verification,
    Version,
)
from envevo.store._paths import RunPaths
from envevo.store._schema import MIGRATIONS, SCHEMA_VERSION
from envevo.task import COMPONENTS, Task, diff_tasks, dir_hash, load_task, save
from envevo.trace import Difficulty, Direction, Effort, Trace
from envevo.trace._drift import Drift

_HASH_RE = re.compile(r"^[0-9a-f]{64}$")
BUSY_TIMEOUT_S = 60.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _json(obj: Any) -> str | None:
    if obj is None:
        return None
    if isinstance(obj, BaseModel):
        return obj.model_dump_json()
    return json.dumps(obj, default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return str(obj)


def _as_dict(obj: Any) -> Any:
    if obj is None:
        return None
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return json.loads(json.dumps(obj, default=_default))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def slugify(name: str) -> str:
    """A file-name-safe lineage id from a seed name: its last path part, other characters replaced by '-'."""
    base = name.strip().rstrip("/").rsplit("/", 1)[-1]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip(".-_")
    return slug or "seed"


def _direction(value: Direction | str) -> str:
    try:
        return Direction(value).value
    except ValueError:
        raise StoreError(
            f"unknown direction {value!r}; choose one of: {', '.join(d.value for d in Direction)}"
        ) from None


def _effort(value: Effort | str) -> str:
    try:
        return Effort(value).value
    except ValueError:
        raise StoreError(f"unknown effort {value!r}; choose one of: {', '.join(e.value for e in Effort)}") from None


def _components(mutated: Iterable[str]) -> list[str]:
    names = set(mutated)
    unknown = names - set(COMPONENTS)
    if unknown:
        raise StoreError(f"unknown component(s) {sorted(unknown)}; components are: {', '.join(COMPONENTS)}")
    return [c for c in COMPONENTS if c in names]


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


def _enable_wal(conn: sqlite3.Connection) -> str:
    """Switch to WAL (persistent in the file). Switching needs an exclusive lock that SQLite's busy handler
    does not wait for, so two processes creating one store at once retry here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.005
    while True:
        try:
            current = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
            if str(current).lower() == "wal":
                return "wal"
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchall()[0][0])
        except sqlite3.OperationalError as e:
            if ("locked" not in str(e) and "busy" not in str(e)) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


class LineageStore:
    """The lineages of one run directory. Open with :meth:`open`; close (or use as a context manager)."""

    def __init__(self, paths: RunPaths, conn: sqlite3.Connection, *, durable: bool = True) -> None:
        self.paths = paths
        self._conn = conn
        self._durable = durable
        self._lock = threading.RLock()
        # (lineage, generation) -> the try this store instance opened for it
        self._tries: dict[tuple[str, int], int] = {}

    # ---- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, create: bool = True, durable: bool = True) -> LineageStore:
        """Open the store of ``run_dir``; with ``create`` make the directory and store when missing.

        ``durable=False`` skips fsyncs (tests, scratch runs): still consistent after kill -9, not after
        power loss.
        """
        paths = RunPaths(run_dir=Path(run_dir).expanduser().absolute())
        root = paths.run_dir
        if root.exists() and not root.is_dir():
            raise StoreError(f"run directory {root} is a file; pass the --out directory of an `envevo evolve` run")
        if not create:
            if not root.is_dir():
                raise StoreError(
                    f"run directory {root} does not exist; pass the --out directory of an `envevo evolve` run"
                )
            if not paths.db.is_file():
                raise StoreError(
                    f"{root} is not an envevo run (no store.sqlite in it); pass the --out directory of an `envevo evolve` run"
                )
        else:
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(
                    f"cannot create run directory {root}: {e.strerror or e}; check the path and permissions"
                ) from e
        mode = "rwc" if create else "rw"
        try:
            conn = sqlite3.connect(
                f"{paths.db.as_uri()}?mode={mode}",
                uri=True,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # guarded by the store's lock
                timeout=BUSY_TIMEOUT_S,
            )
        except sqlite3.Error as e:
            raise StoreError(f"cannot open {paths.db}: {e}; check the path and permissions") from e
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            journal = _enable_wal(conn)
            if str(journal).lower() != "wal":
                raise StoreError(
                    f"{paths.db}: SQLite cannot use WAL mode here (got {journal!r}); put the run directory on a local filesystem"
                )
            conn.execute("PRAGMA synchronous = FULL" if durable else "PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            _migrate(conn, paths.db, create=create)
        except sqlite3.DatabaseError as e:
            conn.close()
            raise StoreError(
                f"{paths.db} is not a readable envevo store ({e}); pass the --out directory of an `envevo evolve` run"
            ) from e
        except BaseException:
            conn.close()
            raise
        store = cls(paths, conn, durable=durable)
        store._clean_tmp()
        return store

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def run_dir(self) -> Path:
        return self.paths.run_dir

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT MAX(version) FROM schema_version").fetchall()[0][0])

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction. BEGIN IMMEDIATE takes the write lock up front (no upgrade deadlocks)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _clean_tmp(self) -> None:
        """Remove staging dirs left by processes that died mid-write (their pid is in the name)."""
        if not self.paths.tmp.is_dir():
            return
        for entry in self.paths.tmp.iterdir():
            m = re.match(r"put-(\d+)-", entry.name)
            if m and not pid_alive(int(m.group(1))):
                shutil.rmtree(entry, ignore_errors=True)

    # ---- task versions ------------------------------------------------------------------------
    def put_task(self, task: Task) -> str:
        """Store ``task`` as ``tasks/<content_hash>/`` and return the hash. Idempotent; never rewrites a version.

        The task is not validated: every candidate is archived, sound or not (commits validate).
        """
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
                f"cannot write task versions under {self.run_dir}: {e.strerror or e}; check free space and permissions"
            ) from e
        try:
            staged = save(task, staging / "task", validate=False)
            got = dir_hash(staged)
            if got != task_hash:  # pragma: no cover - a bug in save/hash, never expected
                raise StoreError(f"task {task.name} hashed {task_hash[:12]} in memory but {got[:12]} on disk")
            if self._durable:
                _fsync_tree(staged)
            try:
                os.rename(staged, dest)  # atomic; fails if dest exists (another writer stored the same content)
            except OSError as e:
                if not dest.is_dir():
                    raise StoreError(f"cannot store task version {task_hash[:12]}: {e.strerror or e}") from e
            if self._durable:
                _fsync_dir(self.paths.tasks)
        except TaskError as e:
            raise StoreError(f"cannot store task version {task_hash[:12]}: {e}") from e
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return task_hash

    def has_task(self, task_hash: str) -> bool:
        return bool(_HASH_RE.match(task_hash)) and self.paths.task_dir(task_hash).is_dir()

    def task_dir(self, task_hash: str) -> Path:
        """The directory of a stored task version (a full Harbor task dir). Do not modify it."""
        if not _HASH_RE.match(task_hash):
            raise StoreError(f"{task_hash!r} is not a task content hash (64 lowercase hex digits)")
        path = self.paths.task_dir(task_hash)
        if not path.is_dir():
            raise StoreError(f"task version {task_hash[:12]} is not in {self.paths.tasks}")
        return path

    def load_version_task(self, task_hash: str) -> Task:
        return load_task(self.task_dir(task_hash))

    # ---- run config ---------------------------------------------------------------------------
    def set_run_config(self, config: Mapping[str, Any]) -> None:
        """Record the run's settings (engine, effort, generations, seed, …), replacing earlier ones."""
        now = _now()
        text = json.dumps(dict(config), default=_default, sort_keys=True)
        with self._tx() as c:
            c.execute(
                "INSERT INTO run (id, config, created_at, updated_at) VALUES (1, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
                (text, now, now),
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
        ``trace``/``difficulty`` of generation 0 if they were missing). The same name with a different seed
        is an error.
        """
        if not seed_name.strip():
            raise StoreError("a seed name must not be empty")
        seed_hash = seed_task.content_hash()
        existing = self._lineage_by_seed(seed_name)
        if existing is None:
            try:
                seed_task.check()
            except TaskError as e:
                raise StoreError(f"seed {seed_name!r} is not a runnable task: {e}") from e
            self.put_task(seed_task)
        now = _now()
        with self._tx() as c:
            row = c.execute("SELECT id, seed_hash FROM lineages WHERE seed_name = ?", (seed_name,)).fetchone()
            if row is not None:
                if row["seed_hash"] != seed_hash:
                    raise StoreError(
                        f"run {self.run_dir} already has a lineage for seed {seed_name!r} from a different seed task "
                        f"({row['seed_hash'][:12]} there, {seed_hash[:12]} now); resume with the same seed or use a new --out"
                    )
                lineage_id = row["id"]
                if trace is not None or difficulty is not None:
                    c.execute(
                        "UPDATE versions SET trace = COALESCE(trace, ?), difficulty = COALESCE(difficulty, ?), "
                        "L = COALESCE(L, ?), D_T = COALESCE(D_T, ?) WHERE lineage_id = ? AND generation = 0",
                        (_json(trace), _json(difficulty), *_l_dt(trace, difficulty), lineage_id),
                    )
                return lineage_id
            lineage_id = base = slugify(seed_name)
            n = 1
            while c.execute("SELECT 1 FROM lineages WHERE id = ?", (lineage_id,)).fetchone():
                n += 1
                lineage_id = f"{base}-{n}"
            c.execute(
                "INSERT INTO lineages (id, seed_name, seed_hash, status, created_at, updated_at) VALUES (?, ?, ?, 'running', ?, ?)",
                (lineage_id, seed_name, seed_hash, now, now),
            )
            try_id = c.execute(
                "INSERT INTO generation_tries (lineage_id, generation, status, pid, started_at, finished_at) "
                "VALUES (?, 0, 'committed', ?, ?, ?) RETURNING id",
                (lineage_id, os.getpid(), now, now),
            ).fetchall()[0][0]
            c.execute(
                "INSERT INTO versions (lineage_id, generation, task_hash, parent_hash, trace, difficulty, L, D_T, mutated, "
                "verified, try_id, created_at) VALUES (?, 0, ?, NULL, ?, ?, ?, ?, '[]', ?, ?, ?)",
                (
                    lineage_id,
                    seed_hash,
                    _json(trace),
                    _json(difficulty),
                    *_l_dt(trace, difficulty),
                    int(verified),
                    try_id,
                    now,
                ),
            )
        return lineage_id

    def _lineage_by_seed(self, seed_name: str) -> str | None:
        rows = self._rows("SELECT id FROM lineages WHERE seed_name = ?", (seed_name,))
        return rows[0]["id"] if rows else None

    _LINEAGE_SQL = (
        "SELECT l.*, (SELECT MAX(generation) FROM versions v WHERE v.lineage_id = l.id) AS latest_generation "
        "FROM lineages l"
    )

    def lineages(self, status: LineageStatus | str | None = None) -> list[Lineage]:
        """All lineages in creation order, optionally only those with ``status``."""
        if status is None:
            rows = self._rows(f"{self._LINEAGE_SQL} ORDER BY l.rowid")
        else:
            rows = self._rows(
                f"{self._LINEAGE_SQL} WHERE l.status = ? ORDER BY l.rowid", (LineageStatus(status).value,)
            )
        return [Lineage(**dict(r)) for r in rows]

    def lineage(self, lineage_id: str) -> Lineage:
        rows = self._rows(f"{self._LINEAGE_SQL} WHERE l.id = ?", (lineage_id,))
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
        now = _now()
        with self._tx() as c:
            c.execute(
                "UPDATE lineages SET status = ?, reason = ?, updated_at = ? WHERE id = ?",
                (status.value, reason, now, lineage_id),
            )
            if status is not LineageStatus.RUNNING:
                c.execute(
                    "UPDATE generation_tries SET status = 'failed', finished_at = ? WHERE lineage_id = ? AND status = 'open'",
                    (now, lineage_id),
                )

    # ---- versions -----------------------------------------------------------------------------
    def versions(self, lineage_id: str | None = None) -> list[Version]:
        """Committed versions of one lineage (or of all), by lineage then generation."""
        if lineage_id is None:
            rows = self._rows(
                f"{_VERSION_SQL} JOIN lineages l ON l.id = v.lineage_id ORDER BY l.rowid, v.generation"
            )
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

    # ---- semantic drift -------------------------------------------------------------------------
    def set_drift(self, lineage_id: str, generation: int, drift: Drift) -> None:
        """Record (or replace) the drift of a committed version."""
        with self._tx() as c:
            row = c.execute("SELECT id FROM versions WHERE lineage_id = ? AND generation = ?",
                            (lineage_id, generation)).fetchone()
            if row is None:
                raise StoreError(f"lineage {lineage_id} has no committed generation {generation}")
            _insert_drift(c, row["id"], drift)

    def measure_drift(self, lineage_id: str, task: Task, parent_hash: str | None) -> Drift:
        """The drift of `task` (a candidate or stored version of the lineage) from the seed and from `parent_hash`."""
        from envevo.trace._drift import measure_drift

        seed = self.load_version_task(self.lineage(lineage_id).seed_hash)
        parent = self.load_version_task(parent_hash) if parent_hash is not None else None
        return measure_drift(task, seed, parent)

    def ensure_drift(self, lineage_id: str | None = None) -> int:
        """Compute and store the drift of every version that has none (runs from before drift was recorded, or
        commits made without the encoder); return how many were computed. Needs the sentence encoder."""
        computed = 0
        for v in self.versions(lineage_id):
            if v.drift is not None:
                continue
            if v.generation == 0:
                drift = self.measure_drift(v.lineage_id, self.load_version_task(v.task_hash), None)
            else:
                drift = self.measure_drift(v.lineage_id, self.load_version_task(v.task_hash), v.parent_hash)
            self.set_drift(v.lineage_id, v.generation, drift)
            computed += 1
        return computed

    def next_generation(self, lineage_id: str) -> int:
        """The generation to work on next: one past the last committed one (1 when only the seed exists)."""
        return self.latest_version(lineage_id).generation + 1

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
        """THE commit point of a generation: store the task dir, then record the version in one transaction.

        ``drift`` (see :meth:`measure_drift`) is recorded in the same transaction; without it the version gets its
        drift computed on first read (:meth:`ensure_drift`).

        ``generation`` must be :meth:`next_generation`, and ``parent_hash`` (by default taken from the store)
        the hash of generation − 1, so generations stay contiguous and each extends the previous one. The task
        must pass ``Task.check()``. ``mutated`` defaults to the components that differ from the parent.
        Re-committing the identical version is a no-op; anything else already at that generation is an error.
        """
        direction_s, effort_s = _direction(direction), _effort(effort)
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
            mutated_list = _components(diff_tasks(self.load_version_task(parent), task).mutated)
        else:
            mutated_list = _components(mutated)
        now = _now()
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
            if candidate_id is not None:
                cand = c.execute(
                    "SELECT lineage_id, generation, task_hash FROM candidates WHERE id = ?", (candidate_id,)
                ).fetchone()
                if cand is None or (cand["lineage_id"], cand["generation"]) != (lineage_id, generation):
                    raise StoreError(
                        f"candidate {candidate_id} is not a candidate for generation {generation} of {lineage_id}"
                    )
                if cand["task_hash"] != task_hash:
                    raise StoreError(
                        f"candidate {candidate_id} holds task {str(cand['task_hash'])[:12]}, not {task_hash[:12]}"
                    )
                c.execute("UPDATE candidates SET accepted = 1 WHERE id = ?", (candidate_id,))
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
                    _json(trace),
                    _json(difficulty),
                    *_l_dt(trace, difficulty),
                    json.dumps(mutated_list),
                    int(verified),
                    candidate_id,
                    try_id,
                    now,
                ),
            ).fetchall()[0]
            if drift is not None:
                _insert_drift(c, vrow["id"], drift)
            c.execute("UPDATE generation_tries SET status = 'committed', finished_at = ? WHERE id = ?", (now, try_id))
            c.execute("UPDATE lineages SET updated_at = ? WHERE id = ?", (now, lineage_id))
            version = _version(vrow).model_copy(update={"drift": drift})
        self._tries.pop((lineage_id, generation), None)
        return version

    # ---- generation history: tries, plans, candidates, verifications --------------------------
    def start_generation(self, lineage_id: str, generation: int) -> int:
        """Open a try at ``generation`` (abandoning tries left open by a dead process); return its id.

        Optional: :meth:`add_plan` and :meth:`add_candidate` open one on first use.
        """
        with self._tx() as c:
            return self._current_try(c, lineage_id, generation, fresh=True)

    def _current_try(self, c: sqlite3.Connection, lineage_id: str, generation: int, *, fresh: bool = False) -> int:
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
        now = _now()
        c.execute(
            "UPDATE generation_tries SET status = 'abandoned', finished_at = ? "
            "WHERE lineage_id = ? AND generation = ? AND status = 'open'",
            (now, lineage_id, generation),
        )
        try_id = c.execute(
            "INSERT INTO generation_tries (lineage_id, generation, status, pid, started_at) VALUES (?, ?, 'open', ?, ?) RETURNING id",
            (lineage_id, generation, os.getpid(), now),
        ).fetchall()[0][0]
        self._tries[key] = try_id
        return try_id

    def tries(self, lineage_id: str, generation: int | None = None) -> list[GenerationTry]:
        sql, params = "SELECT * FROM generation_tries WHERE lineage_id = ?", [lineage_id]
        if generation is not None:
            sql, params = sql + " AND generation = ?", [*params, generation]
        return [GenerationTry(**dict(r)) for r in self._rows(sql + " ORDER BY id", params)]

    def add_plan(
        self,
        lineage_id: str,
        generation: int,
        direction: Direction | str,
        attempt: int,
        proposal: Any | None,
        review: Any | None,
        *,
        accepted: bool | None = None,
        feedback: str | None = None,
    ) -> int:
        """Record one Proposer/Reviewer round. ``proposal``/``review`` are the pydantic models (or dicts).

        ``accepted`` defaults to the review's verdict (False without a review).
        """
        direction_s = _direction(direction)
        review_d = _as_dict(review)
        if accepted is None:
            accepted = bool(review_d.get("accepted")) if isinstance(review_d, dict) else False
        if feedback is None and isinstance(review_d, dict):
            feedback = review_d.get("feedback") or None
        with self._tx() as c:
            try_id = self._current_try(c, lineage_id, generation)
            return c.execute(
                "INSERT INTO plans (try_id, lineage_id, generation, direction, attempt, proposal, review, accepted, feedback, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    try_id,
                    lineage_id,
                    generation,
                    direction_s,
                    attempt,
                    _json(_as_dict(proposal)),
                    _json(review_d),
                    int(accepted),
                    feedback,
                    _now(),
                ),
            ).fetchall()[0][0]

    def plans(self, lineage_id: str, generation: int | None = None) -> list[Plan]:
        sql, params = "SELECT * FROM plans WHERE lineage_id = ?", [lineage_id]
        if generation is not None:
            sql, params = sql + " AND generation = ?", [*params, generation]
        return [
            Plan(
                **{
                    **dict(r),
                    "proposal": _loads(r["proposal"]),
                    "review": _loads(r["review"]),
                    "accepted": bool(r["accepted"]),
                }
            )
            for r in self._rows(sql + " ORDER BY id", params)
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
        direction_s = _direction(direction)
        task_hash = self.put_task(task) if task is not None else None
        with self._tx() as c:
            try_id = self._current_try(c, lineage_id, generation)
            return c.execute(
                "INSERT INTO candidates (try_id, lineage_id, generation, direction, attempt, plan_id, task_hash, accepted, reasons, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    try_id,
                    lineage_id,
                    generation,
                    direction_s,
                    attempt,
                    plan_id,
                    task_hash,
                    int(accepted),
                    json.dumps(list(reasons)),
                    _now(),
                ),
            ).fetchall()[0][0]

    def set_candidate_result(self, candidate_id: int, accepted: bool, reasons: Iterable[str] = ()) -> None:
        with self._tx() as c:
            cur = c.execute(
                "UPDATE candidates SET accepted = ?, reasons = ? WHERE id = ?",
                (int(accepted), json.dumps(list(reasons)), candidate_id),
            )
            if cur.rowcount != 1:
                raise StoreError(f"no candidate {candidate_id}")

    def candidates(self, lineage_id: str, generation: int | None = None) -> list[Candidate]:
        sql, params = "SELECT * FROM candidates WHERE lineage_id = ?", [lineage_id]
        if generation is not None:
            sql, params = sql + " AND generation = ?", [*params, generation]
        return [
            Candidate(**{**dict(r), "reasons": json.loads(r["reasons"]), "accepted": bool(r["accepted"])})
            for r in self._rows(sql + " ORDER BY id", params)
        ]

    def add_verification(
        self,
        candidate_id: int,
        verifier: str,
        passed: bool,
        reasons: Iterable[str] = (),
        runs: Iterable[Any] = (),
        *,
        wall_seconds: float | None = None,
    ) -> int:
        """Record one verifier's verdict on a candidate; ``runs`` are TrialOutcome models (or dicts)."""
        with self._tx() as c:
            try:
                return c.execute(
                    "INSERT INTO verifications (candidate_id, verifier, passed, reasons, runs, wall_seconds, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        candidate_id,
                        verifier,
                        int(passed),
                        json.dumps(list(reasons)),
                        json.dumps([_as_dict(r) for r in runs]),
                        wall_seconds,
                        _now(),
                    ),
                ).fetchall()[0][0]
            except sqlite3.IntegrityError as e:
                raise StoreError(f"no candidate {candidate_id}") from e

    def add_verifier_report(self, candidate_id: int, report: Any, *, wall_seconds: float | None = None) -> int:
        """Record an ``envevo.verify.VerifierReport`` (name, passed, reasons, runs)."""
        return self.add_verification(
            candidate_id, report.name, report.passed, report.reasons, report.runs, wall_seconds=wall_seconds
        )

    def verifications(self, candidate_id: int) -> list[Verification]:
        rows = self._rows("SELECT * FROM verifications WHERE candidate_id = ? ORDER BY id", (candidate_id,))
        return [
            Verification(
                **{
                    **dict(r),
                    "passed": bool(r["passed"]),
                    "reasons": json.loads(r["reasons"]),
                    "runs": json.loads(r["runs"]),
                }
            )
            for r in rows
        ]

    # ---- accounting: rollouts and usage ---------------------------------------------------------
    def add_rollout(
        self,
        task_hash: str,
        agent: str,
        k: int,
        *,
        model: str | None = None,
        reward: float | None = None,
        turns: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
        duration_s: float | None = None,
        error_kind: str | None = None,
        simulated: bool = False,
        trial_dir: str | os.PathLike[str] | None = None,
    ) -> int:
        """Record rollout ``k`` of ``agent``/``model`` on a task version; re-recording the same k replaces it."""
        with self._tx() as c:
            return c.execute(
                "INSERT INTO rollouts (task_hash, agent, model, k, reward, turns, input_tokens, output_tokens, cost_usd, "
                "duration_s, error_kind, simulated, trial_dir, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (task_hash, agent, model, k) DO UPDATE SET reward = excluded.reward, turns = excluded.turns, "
                "input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, "
                "duration_s = excluded.duration_s, error_kind = excluded.error_kind, simulated = excluded.simulated, "
                "trial_dir = excluded.trial_dir, created_at = excluded.created_at RETURNING id",
                (
                    task_hash,
                    agent,
                    model or "",
                    k,
                    reward,
                    turns,
                    input_tokens,
                    output_tokens,
                    cost_usd,
                    duration_s,
                    None if error_kind is None else str(error_kind),
                    int(simulated),
                    None if trial_dir is None else str(trial_dir),
                    _now(),
                ),
            ).fetchall()[0][0]

    def rollouts(
        self, task_hash: str | None = None, *, agent: str | None = None, model: str | None = None
    ) -> list[Rollout]:
        where, params = [], []
        for col, val in (("task_hash", task_hash), ("agent", agent), ("model", model)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        sql = (
            "SELECT * FROM rollouts"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY task_hash, agent, model, k"
        )
        return [
            Rollout(**{**dict(r), "model": r["model"] or None, "simulated": bool(r["simulated"])})
            for r in self._rows(sql, params)
        ]

    def add_usage(
        self,
        role: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        model: str | None = None,
        cost_usd: float | None = None,
        lineage_id: str | None = None,
        generation: int | None = None,
    ) -> int:
        """Record the tokens (and cost) one LLM role spent, optionally attributed to a lineage generation."""
        with self._tx() as c:
            try:
                return c.execute(
                    "INSERT INTO usage (lineage_id, generation, role, model, input_tokens, output_tokens, cost_usd, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (lineage_id, generation, role, model, input_tokens, output_tokens, cost_usd, _now()),
                ).fetchall()[0][0]
            except sqlite3.IntegrityError as e:
                raise StoreError(f"run {self.run_dir} has no lineage {lineage_id!r}") from e

    def usage(self, lineage_id: str | None = None) -> list[Usage]:
        if lineage_id is None:
            rows = self._rows("SELECT * FROM usage ORDER BY id")
        else:
            rows = self._rows("SELECT * FROM usage WHERE lineage_id = ? ORDER BY id", (lineage_id,))
        return [Usage(**dict(r)) for r in rows]

    def usage_totals(self, lineage_id: str | None = None) -> list[UsageTotal]:
        """Tokens and cost per (role, model); cost is None when no call of the group reported one."""
        where, params = ("WHERE lineage_id = ?", (lineage_id,)) if lineage_id is not None else ("", ())
        rows = self._rows(
            "SELECT role, model, COUNT(*) AS calls, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, "
            f"SUM(cost_usd) AS cost_usd FROM usage {where} GROUP BY role, model ORDER BY role, model",
            params,
        )
        return [UsageTotal(**dict(r)) for r in rows]

    # ---- integrity ------------------------------------------------------------------------------
    def check(self, *, rehash: bool = True) -> list[str]:
        """Problems found (empty when sound): SQLite integrity, foreign keys, contiguous generations, parent
        links, and every committed version's task dir present (and, with ``rehash``, matching its name)."""
        problems: list[str] = []
        with self._lock:
            integrity = [r[0] for r in self._conn.execute("PRAGMA integrity_check").fetchall()]
            fk = self._conn.execute("PRAGMA foreign_key_check").fetchall()
        if integrity != ["ok"]:
            problems.extend(f"sqlite: {msg}" for msg in integrity)
        problems.extend(f"foreign key: {tuple(r)}" for r in fk)
        for lin in self.lineages():
            versions = self.versions(lin.id)
            gens = [v.generation for v in versions]
            if gens != list(range(len(gens))):
                problems.append(f"{lin.id}: generations {gens} are not contiguous from 0")
            if versions and versions[0].task_hash != lin.seed_hash:
                problems.append(f"{lin.id}: generation 0 is not the seed")
            for prev, cur in zip(versions, versions[1:]):
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


def _l_dt(trace: Trace | None, difficulty: Difficulty | None) -> tuple[int | None, float | None]:
    if difficulty is not None:
        return difficulty.L, difficulty.D_T
    return (trace.L if trace is not None else None), None


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


#: Versions with their drift (NULL until measured).
_VERSION_SQL = "SELECT v.*, d.detail AS drift FROM versions v LEFT JOIN version_drift d ON d.version_id = v.id"


def _insert_drift(c: sqlite3.Connection, version_id: int, drift: Drift) -> None:
    c.execute(
        "INSERT INTO version_drift (version_id, goal_seed, goal_parent, instruction_seed, instruction_parent, measure, "
        "detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (version_id) DO UPDATE SET "
        "goal_seed = excluded.goal_seed, goal_parent = excluded.goal_parent, instruction_seed = excluded.instruction_seed, "
        "instruction_parent = excluded.instruction_parent, measure = excluded.measure, detail = excluded.detail, "
        "created_at = excluded.created_at",
        (version_id, drift.goal_seed, drift.goal_parent, drift.instruction_seed, drift.instruction_parent,
         drift.measure, drift.model_dump_json(), _now()),
    )


def _migrate(conn: sqlite3.Connection, db: Path, *, create: bool) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" in tables:
            current = conn.execute("SELECT MAX(version) FROM schema_version").fetchall()[0][0] or 0
        elif tables:
            raise StoreError(f"{db} is an SQLite database but not an envevo store; use a new --out directory")
        elif not create:
            raise StoreError(f"{db} is empty, not an envevo store; pass the --out directory of an `envevo evolve` run")
        else:
            current = 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{db} was written by a newer envevo (store schema {current}, this one reads up to {SCHEMA_VERSION}); upgrade envevo"
            )
        for version, statements in MIGRATIONS:
            if version > current:
                for stmt in statements:
                    conn.execute(stmt)
                conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, _now()))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
