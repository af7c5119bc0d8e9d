"""What `--force` may replace: only a folder that envevo wrote for the same purpose (it holds that purpose's marker
file), never a folder that is or holds a run store, never an unrelated folder. A wrong `--out` then costs one line,
not a run."""

from __future__ import annotations

import json
import os
from pathlib import Path

from envevo.store._encode import now
from envevo.store._models import StoreError
from envevo.store._paths import RunPaths

#: Written by `envevo export` into every folder it creates (the Harbor dataset folder, the rl folder).
EXPORT_MARKER = ".envevo-export.json"


def run_store_under(path: Path) -> Path | None:
    """The first run store at or under `path` (symlinks not followed), or None."""
    db_name = RunPaths(run_dir=path).db.name
    for root, dirs, files in os.walk(path, followlinks=False):
        if db_name in files:
            return Path(root) / db_name
        dirs[:] = [d for d in dirs if not Path(root, d).is_symlink()]
    return None


def check_replaceable(dest: Path, *, marker: str, what: str) -> None:
    """Refuse (one line) to replace the non-empty folder `dest` unless it holds `marker` and no run store.
    An absent or empty `dest`, or a file (which the writer refuses itself), passes."""
    if not dest.is_dir() or dest.is_symlink() or not any(dest.iterdir()):
        return
    store = run_store_under(dest)
    if store is not None:
        where = "is a run dir" if store.parent == dest else f"holds a run store ({store})"
        raise StoreError(f"refusing to replace {dest}: it {where}; --force replaces only a previous {what}; "
                         "choose a new --out")
    if not (dest / marker).is_file():
        raise StoreError(f"refusing to replace {dest}: it is not empty and is not a previous {what} (no {marker}); "
                         "--force replaces only what envevo wrote; choose a new or empty --out")


def write_marker(folder: Path, marker: str, **facts: object) -> None:
    """Mark `folder` as written by envevo for one purpose, so a later `--force` may replace it."""
    (folder / marker).write_text(json.dumps({"written_by": "envevo", "at": now(), **facts}, indent=2) + "\n",
                                 encoding="utf-8")
