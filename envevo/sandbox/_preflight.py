"""Before any work: is the sandbox usable, and what does a task run as here?

`preflight` fails in one line for an unknown `--env` or a missing local engine, removes what a killed envevo
process left on this host, and keeps the image cache under its budget. `runnable_copy` is the directory a task's
trials run: the task itself, or a copy with local stand-ins for base images a local engine cannot pull, Harbor's
schema fixes that keep the task's meaning, and BuildKit heredocs rewritten for a builder that does not know them.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from envevo.errors import TaskError, UserError
from envevo.runtime import DIALECTS, LOCAL_ENGINES, check_env, harbor_schema, sweep_orphans
from envevo.sandbox._paths import activate, home
from envevo.sandbox._prune import enforce_budget
from envevo.sandbox._standins import standins_for
from envevo.sandbox._uv_offline import offline_uv, own_python
from envevo.task import ImageMap, Task, lf_scripts, load_task, prepare_runnable, rewrite_task_heredocs

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


@functools.cache
def engine_version(engine: str) -> tuple[int, ...] | None:
    """The engine's (major, minor, patch), None when it does not say."""
    try:
        out = subprocess.run([engine, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def builder_knows_heredocs(engine: str) -> bool:
    """BuildKit (docker) does; buildah learned them in 1.33 and got them right by 1.35, which podman 5 ships.
    A podman that does not say its version is taken as older: the rewrite keeps the task's meaning either way."""
    dialect = DIALECTS.get(engine)
    since = dialect.builder_heredocs_from if dialect is not None else None
    if since is None:
        return True
    version = engine_version(engine)
    return version is not None and version >= since


def harbor_ready(task: Task, engine: str | None) -> tuple[Task, list[str]]:
    """``task`` as Harbor on this host runs it, and one stated line per change: Harbor's schema fixes that keep the
    task's meaning and, for a builder without them, BuildKit heredocs rewritten. A schema problem no fix covers is a
    TaskError, one line per field, before any trial."""
    check = harbor_schema(tomllib.loads(task.config_toml()))
    where = task.source or task.name
    if check.problems:
        lines = "\n".join(f"  {p}" for p in check.problems)
        raise TaskError(f"{where}: Harbor would reject this task ({len(check.problems)} problem(s)):\n{lines}")
    stated = [f"{fix}" for fix in check.fixes]
    if check.fixes:
        task = task.model_copy(deep=True)
        task.config = check.config
    if engine is not None and not builder_knows_heredocs(engine):
        task, count = rewrite_task_heredocs(task)
        if count:
            version = ".".join(str(v) for v in (engine_version(engine) or ())[:2]) or "(unknown version)"
            stated.append(f"rewrote {count} BuildKit heredoc{'s' if count > 1 else ''} for {engine} {version} "
                          "(its builder does not know them)")
    return task, stated


def runnable_copy(task: Task, env: str, image_map: ImageMap, dest_root: Path) -> tuple[Path, list[str]]:
    """The dir `task`'s trials run on `env`, and one stated line per change: a base image a local stand-in replaces, a
    schema fix, heredocs rewritten (`harbor_ready`)."""
    engine = env.removeprefix("harbor:")
    local = engine in LOCAL_ENGINES
    files, crlf = lf_scripts(task.files)
    changes = [f"CRLF line ends made LF in {', '.join(crlf)} (a `#!/bin/bash` line ending in CR fails with "
               '"required file not found")'] if crlf else []
    if crlf:
        task = task.model_copy(update={"files": files})
    if local:  # before the heredoc rewrite, which would hide a RUN step's installer in exec form
        task, uv = offline_uv(task)
        changes += uv
    task, stated = harbor_ready(task, engine if local else None)
    if not local:
        return prepare_runnable(task, image_map, dest_root), changes + stated
    standins, lines = standins_for(task, engine)
    task, python = own_python(task, lines)
    return prepare_runnable(task, standins.merged(image_map), dest_root), lines + changes + python + stated


def substitutions(task_dirs: list[Path], engine: str) -> dict[str, list[str]]:
    """Per task, the stand-ins and rewrites a local run uses, each stated (tasks that do not load are skipped)."""
    found: dict[str, list[str]] = {}
    for d in task_dirs:
        try:
            task = load_task(d)
            ready, stated = harbor_ready(task, engine)
        except TaskError:
            continue
        _, lines = standins_for(ready, engine)
        if lines + stated:
            found[task.name] = lines + stated
    return found
