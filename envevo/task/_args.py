"""Task arguments as commands take them: task dirs and dataset folders, expanded, checked and loaded."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from envevo.errors import TaskError
from envevo.task._load import detect_format, expand_task_dirs, load_task, looks_like_task
from envevo.task._model import Task


def existing_task_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """`expand_task_dirs` of paths that must all exist (one clear error for the first that does not)."""
    given = [Path(p) for p in paths]
    missing = [p for p in given if not p.exists()]
    if missing:
        raise TaskError(f"task path {missing[0]} does not exist; check the spelling")
    return expand_task_dirs(given)


def load_task_args(paths: Iterable[str | os.PathLike[str]]) -> list[Task]:
    """Every task the arguments name (dataset folders stand for their tasks), all loaded, so every task is
    validated before any container starts."""
    return [load_task(p) for p in expand_task_dirs(paths)]


def load_task_batch(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Task], list[tuple[Path, str]]]:
    """Every task the arguments name, each loaded on its own: a batch never stops for one task. Returns the tasks that
    load and, for each one that does not, (its dir, the one-line reason). An argument that does not exist is a
    TaskError at once (a typo, said before any work)."""
    loaded: list[Task] = []
    refused: list[tuple[Path, str]] = []
    for d in existing_task_dirs(paths):
        try:
            loaded.append(load_task(d))
        except TaskError as e:
            refused.append((d, str(e)))
    return loaded, refused


def first_duplicate(names: Sequence[str]) -> str | None:
    """The first name given twice, if any (lineages and trial dirs are named after tasks)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def unique_by_hash(tasks: Iterable[Task], skip: Collection[str] = ()) -> list[Task]:
    """Tasks with distinct content, in order, leaving out those whose hash is in `skip` (e.g. already done)."""
    todo: list[Task] = []
    seen = set(skip)
    for task in tasks:
        digest = task.content_hash()
        if digest not in seen:
            seen.add(digest)
            todo.append(task)
    return todo


def tb1_import_pairs(src: Path, dest: Path) -> list[tuple[Path, Path]]:
    """(Terminal-Bench 1 task dir, Harbor task dir to write) for `src`: one task, or every task in a folder of them."""
    if looks_like_task(src) or not src.is_dir():
        if detect_format(src) != "terminal-bench-1":
            raise TaskError(f"{src} is already a Harbor task (it has task.toml); nothing to import")
        return [(src, dest)]
    children = sorted(c for c in src.iterdir() if c.is_dir() and (c / "task.yaml").is_file())
    if not children:
        raise TaskError(f"{src} holds no Terminal-Bench 1 tasks (no subfolder with task.yaml)")
    return [(c, dest / c.name) for c in children]
