"""One writer per run: an OS lock on ``RUN_DIR/run.lock`` that a second ``envevo evolve`` meets and refuses on.

Two evolve processes on one run dir keep the store consistent (SQLite serializes them) but both do the work of
every generation, and each abandons the other's tries. ``fcntl.flock`` is held by the open file, so the OS drops
it when the holder ends, however it ends (even ``kill -9``): a lock is never stale, and there is nothing to clean
up. The file holds the holder's PID and command, only so that a refusal can name them.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO

from envevo.store._models import StoreError


class RunLock:
    """An exclusive hold on a run dir by this process; :meth:`release`, a garbage-collected lock or the process's
    end lets go."""

    def __init__(self, path: Path, file: IO[str]) -> None:
        self.path = path
        self._file = file

    @classmethod
    def acquire(cls, path: Path, holder: str) -> RunLock:
        """Take the lock at ``path`` for ``holder`` (e.g. "envevo evolve"), or refuse naming the live holder."""
        try:
            file = path.open("a+")  # not "w": the holder's PID must stay readable until we hold the lock
        except OSError as exc:
            raise StoreError(f"cannot lock the run: {path}: {exc.strerror or exc}; check the path and permissions") from exc
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            what, pid = _holder(path)
            stop = f"kill {pid}" if pid else "stop it"
            raise StoreError(f"{path.parent} is in use by {what}" + (f" (pid {pid})" if pid else "")
                             + f"; wait for it to end (or {stop}), then continue the run with --resume") from None
        except BaseException:
            file.close()
            raise
        file.truncate(0)
        file.write(f"{os.getpid()} {holder}\n")
        file.flush()
        return cls(path, file)

    def release(self) -> None:
        self._file.close()  # closing the file drops the flock


def _holder(path: Path) -> tuple[str, int | None]:
    """(command, PID) of the holder, from the lock file; it writes them just after locking, so wait a moment."""
    for _ in range(20):
        try:
            pid, _, what = path.read_text().strip().partition(" ")
        except OSError:
            pid, what = "", ""
        if pid.isdigit():
            return what or "another process", int(pid)
        time.sleep(0.05)
    return "another process", None


def is_held(path: Path) -> bool:
    """Whether a live process holds the run's lock (a lineage stored as running whose writer was killed is not
    running). Read-only: opens nothing for writing, creates nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return False
