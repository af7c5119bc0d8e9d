"""Leave no container behind: label every local sandbox with its owner, and sweep on exit.

Harbor tears a trial's containers down itself, also on cancellation. This module is the backstop for
what it cannot cover: a second Ctrl-C during teardown, an exception in teardown, or a killed process
(swept by the next run, since the owner pid is recorded on the container).
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from envevo._process import pid_alive
from envevo.runtime._engine_dialect import LOCAL_ENGINES, dialect_of

OWNER_LABEL = "envevo.owner"


def owner_id(pid: int | None = None) -> str:
    return f"{socket.gethostname()}:{pid or os.getpid()}"


@cache
def overlay_compose_file() -> Path:
    """A compose overlay for the local engines; one per process, removed at exit."""
    fd, name = tempfile.mkstemp(prefix="envevo-overlay-", suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        # SIGKILL on stop: the sandbox is disposable and its PID 1 (`sleep infinity`) ignores SIGTERM,
        # which otherwise costs the full 10 s grace period at every teardown.
        f.write(
            "services:\n"
            "  main:\n"
            "    stop_signal: SIGKILL\n"
            f"    labels:\n      {OWNER_LABEL}: \"{owner_id()}\"\n"
        )
    path = Path(name)
    atexit.register(path.unlink, missing_ok=True)
    ensure_exit_sweep()
    return path


@cache
def ensure_exit_sweep() -> None:
    """Remove this process's sandboxes at interpreter exit (once per process), whatever started them."""
    atexit.register(_at_exit)


def _at_exit() -> None:
    for engine in LOCAL_ENGINES:
        remove_containers(engine, owner_id())


def _ps(engine: str, *filters: str) -> list[tuple[str, str, str]]:
    """(container id, owner label, image) of containers matching the filters."""
    if not shutil.which(engine):
        return []
    fmt = "{{.ID}} {{.Image}} {{index .Labels \"" + OWNER_LABEL + "\"}}"
    args = [engine, "ps", "-a", "--format", fmt]
    for flt in filters:
        args += ["--filter", flt]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out.splitlines():
        cid, image, owner = (line.strip().split(" ", 2) + ["", ""])[:3]
        if cid:
            rows.append((cid, owner.strip(), image))
    return rows


def list_containers(engine: str, owner: str | None = None) -> list[str]:
    """Ids of envevo-owned containers, optionally of one owner."""
    flt = f"label={OWNER_LABEL}" + (f"={owner}" if owner else "")
    return [cid for cid, _, _ in _ps(engine, flt)]


def _rm_argv(engine: str, ids: list[str]) -> list[str]:
    return dialect_of(engine).rm(*ids)


def remove_containers(engine: str, owner: str | None = None) -> int:
    ids = list_containers(engine, owner)
    if ids:
        try:
            subprocess.run(_rm_argv(engine, ids), capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            pass  # the engine is wedged; the next run's sweep of orphans retries
    return len(ids)


def sweep_orphans(engine: str) -> int:
    """Remove containers whose owning envevo process on this host is gone (e.g. after kill -9)."""
    host = socket.gethostname()
    dead, images = [], set()
    for cid, owner, image in _ps(engine, f"label={OWNER_LABEL}"):
        owner_host, _, pid = owner.rpartition(":")
        if owner_host == host and pid.isdigit() and not pid_alive(int(pid)):
            dead.append(cid)
            images.add(image)
    if dead:
        subprocess.run(_rm_argv(engine, dead), capture_output=True, timeout=120)
        # The per-trial image Harbor would have removed at teardown; shared layers stay cached.
        subprocess.run([engine, "rmi", *images], capture_output=True, timeout=120)
    return len(dead)
