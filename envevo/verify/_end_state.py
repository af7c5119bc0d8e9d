"""End states of a solution and its near misses, read back from their trials and compared (equivalent mutants).

A trial run with `TrialSpec.fingerprint` leaves `agent/end-state.txt` (written in the container:
envevo/runtime/_end_state.py). Its bytes are the container's, so hostile: the file is opened without following a
link, read only if it is a regular file under MAX_BYTES, and any record out of shape makes the whole file unknown
(None), never a guess. Unknown means "judge the mutant as before": only an end state known and *equal* makes a
mutant equivalent.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from envevo.runtime import END_STATE
from envevo.task import Task

MAX_BYTES = 16 * 1024 * 1024
_HEADER = b"envevo-end-state/1\n"
_TYPES = {"f", "d", "l", "p", "s", "c", "b", "D", "absent"}
_MODE = re.compile(r"^([0-7]{1,4}|-)$")
_CONTENT = re.compile(r"^([0-9a-f]{64}|l[0-9a-f]{64}|image|unreadable|-)$")
# Paths the fingerprint leaves out (envevo/runtime/_end_state.py EXCLUDED): an artifact there cannot be compared.
_UNSEEN = ("/proc", "/sys", "/dev", "/run", "/logs", "/tmp", "/var/tmp", "/var/cache", "/root/.cache", "/solution",
           "/tests")

EndState = dict[str, tuple[str, str, str]]  # path → (type, mode, content) of each path the solution changed


def read_bounded(path: Path, limit: int = MAX_BYTES) -> bytes | None:
    """A regular file's bytes, opened without following a link; None for anything else or over `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def parse_end_state(data: bytes | None) -> EndState | None:
    """The records of an end-state file; None when it is missing, truncated, or not exactly in shape."""
    if not data or not data.startswith(_HEADER) or not data.endswith(b"\0"):
        return None
    records = data[len(_HEADER):-1].split(b"\0")
    if records[-1] != b"end":
        return None  # `truncated`, or cut short
    out: EndState = {}
    for raw in records[:-1]:
        parts = raw.split(b" ", 3)
        if len(parts) != 4:
            return None
        kind, mode, content = (p.decode("ascii", "replace") for p in parts[:3])
        path = parts[3].decode("utf-8", "surrogateescape")
        if kind not in _TYPES or not _MODE.match(mode) or not _CONTENT.match(content) or not path.startswith("/"):
            return None
        if path in out:
            return None  # a path listed twice: not a listing find made
        out[path] = (kind, mode, content)
    return out


def read_end_state(trial_dir: Path | None) -> EndState | None:
    if trial_dir is None:
        return None
    return parse_end_state(read_bounded(Path(trial_dir) / "agent" / END_STATE))


def visible_roots(task: Task) -> list[str] | None:
    """What the tests can see of the agent's container: None for all of it (a shared verifier), else the declared
    artifacts of a separate verifier."""
    verifier = task.config.get("verifier")
    if not isinstance(verifier, dict) or verifier.get("environment_mode") != "separate":
        return None
    roots = []
    for a in task.config.get("artifacts") or []:
        source = a if isinstance(a, str) else a.get("source") if isinstance(a, dict) else None
        if isinstance(source, str) and source.startswith("/"):
            roots.append(str(PurePosixPath(source)))
    return roots


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _describe(path: str, mine: tuple[str, str, str] | None, theirs: tuple[str, str, str] | None) -> str:
    """One difference in words; `None` is a path left as the image had it."""
    shown = path.encode("unicode_escape", "backslashreplace").decode("ascii")[:160]  # one line, whatever the name
    gone, kept = (s is not None and s[0] == "absent" for s in (mine, theirs))
    if mine is None:
        why = "not deleted" if kept else "not written"
    elif theirs is None:
        why = "deleted; the solution keeps it" if gone else "changed; the solution leaves it as it was"
    elif gone != kept:
        why = "missing" if gone else "left; the solution deletes it"
    elif mine[0] != theirs[0]:
        why = f"type {mine[0]}, the solution's {theirs[0]}"
    elif mine[2] != theirs[2]:
        why = "content"
    else:
        why = f"mode {mine[1]}, the solution's {theirs[1]}"
    return f"{shown} ({why})"


def end_state_differences(mutant: EndState | None, references: Sequence[EndState | None],
                          roots: list[str] | None = None) -> list[str] | None:
    """The paths where the mutant's end state differs from the full solution's, as the tests could see them (under
    `roots` when given); [] when equal; None when unknown (a fingerprint missing, an artifact the fingerprint leaves
    out). With several reference runs, a path on which they disagree among themselves (a timestamp, a random name)
    is compared by presence and type only: its content is not the solution's to fix."""
    refs = [r for r in references if r is not None]
    if mutant is None or not refs or len(refs) < len(references):
        return None
    if roots is not None and any(_under(r, u) or _under(u, r) for r in roots for u in _UNSEEN):
        return None

    def seen(path: str) -> bool:
        return roots is None or any(_under(path, r) for r in roots)

    paths = sorted(p for p in set(mutant).union(*refs) if seen(p))
    out = []
    for p in paths:
        states = [r.get(p) for r in refs]
        mine = mutant.get(p)
        if all(s == states[0] for s in states):
            if mine != states[0]:
                out.append(_describe(p, mine, states[0]))
        elif (mine[0] if mine else None) not in {s[0] if s else None for s in states}:
            out.append(_describe(p, mine, next(s for s in states if s is not None)))
    return out
