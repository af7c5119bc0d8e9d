"""Before any work: is the sandbox usable, and what does a task run as here?

`preflight` fails in one line for an unknown `--env` or a missing local engine, removes what a killed envevo
process left on this host, and keeps the image cache under its budget. `runnable_copy` is the directory a task's
trials run: the task itself, or a copy with local stand-ins for base images a local engine cannot pull.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from envevo.errors import TaskError, UserError
from envevo.runtime import LOCAL_ENGINES, check_env, sweep_orphans
from envevo.sandbox._paths import activate, home
from envevo.sandbox._prune import enforce_budget
from envevo.sandbox._standins import standins_for
from envevo.task import ImageMap, Task, load_task, prepare_runnable

IMAGE_BUDGET_EVERY_SEC = 600.0


def preflight(env: str, notify: Callable[[str], None] | None = None) -> None:
    """One UserError before any work for an unusable `env`; `notify` gets a line when the image budget acted."""
    activate()
    try:
        engine = check_env(env)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if engine and shutil.which(engine) is None:
        raise UserError(f"{engine} is not installed: run 'envevo doctor --fix --env {engine}'")
    if engine:
        sweep_orphans(engine)  # sandboxes left by a killed envevo process on this host
        keep_image_budget(engine, notify)


def keep_image_budget(engine: str, notify: Callable[[str], None] | None = None,
                      every_sec: float = IMAGE_BUDGET_EVERY_SEC) -> None:
    """Keep envevo's image cache under its budget (oldest first); measured at most every 10 minutes (~1 s)."""
    stamp = home() / "image-budget.stamp"
    if stamp.is_file() and time.time() - stamp.stat().st_mtime < every_sec:
        return
    result = enforce_budget(engine)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()
    if result.removed and notify is not None:
        notify(f"image budget: removed {len(result.removed)} cached image(s), "
               f"{result.bytes_before / 1e9:.1f} → {result.bytes_after / 1e9:.1f} GB (envevo doctor --prune to trim more)")


def runnable_copy(task: Task, env: str, image_map: ImageMap, dest_root: Path) -> tuple[Path, list[str]]:
    """The dir `task`'s trials run on `env`, and one stated line per base image a local stand-in replaces."""
    engine = env.removeprefix("harbor:")
    if engine not in LOCAL_ENGINES:
        return prepare_runnable(task, image_map, dest_root), []
    standins, lines = standins_for(task, engine)
    return prepare_runnable(task, standins.merged(image_map), dest_root), lines


def substitutions(task_dirs: list[Path], engine: str) -> dict[str, list[str]]:
    """Per task, the stand-ins a local run uses, each stated (tasks that do not load are skipped)."""
    found: dict[str, list[str]] = {}
    for d in task_dirs:
        try:
            task = load_task(d)
        except TaskError:
            continue
        _, lines = standins_for(task, engine)
        if lines:
            found[task.name] = lines
    return found
