"""The --out folder: refused when it exists, unless --overwrite and it holds a previous harden output.

envevo deletes only what it wrote: a folder counts as harden output only with the marker file harden writes in it
(`MARKER`, the run's results), and only the task dirs that marker lists are replaced."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from envevo.errors import UserError
from envevo.harden._result import HardenResult
from envevo.task import Task, first_duplicate

MARKER = ".envevo-harden.json"


def check_out(out: Path, overwrite: bool) -> list[str]:
    """The task dirs a previous harden wrote into `out` (empty for a new folder); a UserError when `out` may not be
    written."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; name a folder")
    if not out.exists() or not any(out.iterdir()):
        return []
    marker = out / MARKER
    if not overwrite:
        raise UserError(f"--out {out} already exists; pass --overwrite to replace a previous harden output there, or "
                        "name a new folder")
    if not marker.is_file() or marker.is_symlink():
        raise UserError(f"--out {out} exists and was not written by envevo harden (no {MARKER}); envevo replaces "
                        "only its own output: name a new folder")
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
        written = [str(n) for n in data.get("written", [])]
    except (OSError, ValueError, AttributeError):
        raise UserError(f"{marker} is not a harden marker envevo can read; name a new folder") from None
    return [n for n in written if n and "/" not in n and n not in (".", "..")]


def check_dest(out: Path, name: str, previous: list[str]) -> None:
    """A task's dir in `out` may be written when it is new or a previous harden wrote it."""
    dest = out / name
    if (dest.exists() or dest.is_symlink()) and name not in previous:
        raise UserError(f"{dest} exists and was not written by envevo harden; move it away or name a new --out")


def write_marker(out: Path, results: list[dict], previous: list[str]) -> None:
    """The marker, replaced whole (a temp file renamed), listing every task dir harden wrote into `out`."""
    written = sorted(set(previous) | {Path(r["out"]).name for r in results if r.get("out")})
    out.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".envevo-harden.", dir=out)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"written": written, "results": results}, f, indent=2)
    os.replace(tmp, out / MARKER)


class OutFolder:
    """Where hardened copies go (`harden --out`, `audit`/`seeds select --harden`): checked before any container
    starts, its marker written first and again after each task, so a run cut short can be `--overwrite`n."""

    def __init__(self, out: Path, names: list[str], overwrite: bool):
        self.out = out.absolute()
        self.previous = check_out(self.out, overwrite)
        if (dup := first_duplicate(names)):
            raise UserError(f"two tasks are named {dup!r}; harden them into separate --out folders")
        for name in names:
            check_dest(self.out, name, self.previous)
        self.finished: list[dict] = []

    def start(self) -> None:
        write_marker(self.out, self.finished, self.previous)

    def add(self, result: HardenResult) -> None:
        self.finished.append(result.model_dump(mode="json", exclude={"diff"}))
        write_marker(self.out, self.finished, self.previous)


def out_name(task: Task) -> str:
    """The dir name a task's hardened copy gets: its source dir's."""
    return task.source.name if task.source else task.name.rsplit("/", 1)[-1]
