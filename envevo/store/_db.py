"""The SQLite side of the store: opening in WAL mode, migrations, and short transactions behind one lock.

One connection serves every thread of a process. It is opened with ``check_same_thread=False`` because async
callers run store writes in worker threads (``asyncio.to_thread``) so that fsyncs do not stall the event loop;
the lock makes sure two threads never use the connection at once. Other processes get their own connection, and
SQLite's busy timeout serializes their writes.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from envevo.store._encode import now
from envevo.store._models import StoreError
from envevo.store._schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_S = 60.0


class Database:
    """The store's index: one connection, used by one thread at a time. SQLite's own failures (a file damaged
    mid-way, a missing table, a full disk) become one-line :class:`StoreError`s naming the file."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None = None) -> None:
        self.conn = conn
        self.path = path
        self.lock = threading.RLock()

    def damaged(self, e: sqlite3.Error) -> StoreError:
        where = self.path or "the run store"
        if "full" in str(e):
            return StoreError(f"{where}: the disk is full ({e}); nothing half-written was kept: free space, then run "
                              "the command again (evolve: with --resume)")
        return StoreError(f"{where} cannot be read ({e}): it is damaged or incomplete; restore it from a copy, or "
                          "start a new run")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction. BEGIN IMMEDIATE takes the write lock up front (no upgrade deadlocks)."""
        with self.lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise
                else:
                    self.conn.execute("COMMIT")
            except sqlite3.Error as e:
                if isinstance(e, sqlite3.IntegrityError):  # a conflict the callers name themselves
                    raise
                raise self.damaged(e) from e

    def insert(self, sql: str, params: Sequence[object], *, missing: str | None = None) -> int:
        """One ``INSERT … RETURNING id`` in its own transaction; with ``missing``, a row it refers to that does not
        exist (a foreign-key failure) is a :class:`StoreError` with that message."""
        with self.tx() as c:
            try:
                return int(c.execute(sql, params).fetchall()[0][0])
            except sqlite3.IntegrityError as e:
                if missing is None:
                    raise
                raise StoreError(missing) from e

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self.lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as e:
                raise self.damaged(e) from e

    @property
    def schema_version(self) -> int:
        return int(self.rows("SELECT MAX(version) FROM schema_version")[0][0])

    def problems(self) -> list[str]:
        """What SQLite's integrity and foreign-key checks report (empty when sound)."""
        with self.lock:
            integrity = [r[0] for r in self.conn.execute("PRAGMA integrity_check").fetchall()]
            fk = self.conn.execute("PRAGMA foreign_key_check").fetchall()
        found = [f"sqlite: {msg}" for msg in integrity] if integrity != ["ok"] else []
        return found + [f"foreign key: {tuple(r)}" for r in fk]


def connect(path: Path, *, create: bool, durable: bool, migrate: bool = True) -> sqlite3.Connection:
    """Connect, switch to WAL, set durability, and migrate to the current schema (``migrate``; a reader leaves an
    older store as it is and refuses it, naming the command that upgrades it).

    ``durable`` selects ``synchronous=FULL`` (a commit survives power loss) over ``NORMAL`` (it survives
    kill -9). A file that is not an envevo store, or one from a newer envevo, is a :class:`StoreError`.
    """
    if not create and path.is_file() and path.stat().st_size == 0:  # opening it would write a header into it
        raise StoreError(f"{path} is empty, not an envevo store; pass the run dir of `envevo evolve --run`")
    mode = "rwc" if create else "rw"
    try:
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode={mode}",
            uri=True,
            isolation_level=None,  # we issue BEGIN/COMMIT ourselves
            check_same_thread=False,  # guarded by the lock; see the module docstring
            timeout=BUSY_TIMEOUT_S,
        )
    except sqlite3.Error as e:
        raise StoreError(f"cannot open {path}: {e}; check the path and permissions") from e
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        journal = _enable_wal(conn)
        if str(journal).lower() != "wal":
            raise StoreError(
                f"{path}: SQLite cannot use WAL mode here (got {journal!r}); put the run directory on a local filesystem"
            )
        conn.execute("PRAGMA synchronous = FULL" if durable else "PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path, create=create, migrate=migrate)
    except sqlite3.DatabaseError as e:
        conn.close()
        raise StoreError(
            f"{path} is not a readable envevo store ({e}); pass the run dir of `envevo evolve --run`"
        ) from e
    except BaseException:
        conn.close()
        raise
    return conn


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


def _migrate(conn: sqlite3.Connection, db: Path, *, create: bool, migrate: bool = True) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" in tables:
            current = conn.execute("SELECT MAX(version) FROM schema_version").fetchall()[0][0] or 0
        elif tables:
            raise StoreError(f"{db} is an SQLite database but not an envevo store; use a new run directory")
        elif not create:
            raise StoreError(f"{db} is empty, not an envevo store; pass the run dir of `envevo evolve --run`")
        else:
            current = 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{db} was written by a newer envevo (store schema {current}, this one reads up to {SCHEMA_VERSION}); upgrade envevo"
            )
        if current < SCHEMA_VERSION and current and not migrate:
            raise StoreError(f"{db} is at store schema {current}, older than this envevo's {SCHEMA_VERSION}; a read "
                             f"leaves it as it is: upgrade it once with `envevo lineage upgrade {db.parent}`")
        for version, statements in MIGRATIONS:
            if version > current:
                for stmt in statements:
                    conn.execute(stmt)
                conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, now()))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
