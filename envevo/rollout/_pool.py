"""A balanced seed pool: the same number of tasks from each category, as the paper's 500 balanced environments.

The category is the task's `[metadata] category` (Harbor; a Terminal-Bench 1 task's `category` maps there).
Tasks with the same content are counted once. The pool is written as `OUT/tasks/<name>/` copies plus
`OUT/pool.json`, its composition: per category how many tasks were available and which were drawn.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from envevo.errors import UserError
from envevo.task import expand_task_dirs, load_task

POOL_FILE = "pool.json"
UNCATEGORIZED = "(none)"


class PoolTask(TypedDict):
    """A candidate task of the pool: its name, where it is, its content hash and its category."""

    task: str
    path: str
    hash: str
    category: str


class Duplicate(TypedDict):
    """A task skipped because another has the same content."""

    path: str
    same_as: str


class PooledTask(PoolTask):
    pool_path: str  # its copy, relative to the pool dir


class SeedPool(TypedDict):
    """pool.json: what was drawn, from what, and the drawn tasks."""

    per_category: int
    seed: int
    categories: list[str]
    size: int
    composition: dict[str, dict[str, int]]  # category -> {available, drawn}
    left_out: dict[str, int]  # category not asked for -> its task count
    duplicates: list[Duplicate]
    tasks: list[PooledTask]


def _category(config: Mapping[str, object]) -> str | None:
    meta = config.get("metadata")
    value = meta.get("category") if isinstance(meta, dict) else None
    return str(value).strip() or None if value is not None else None


def categorize(tasks: list[Path]) -> tuple[dict[str, list[PoolTask]], list[Duplicate]]:
    """(category -> its distinct tasks, in path order; tasks that share another's content, skipped)."""
    by_category: dict[str, list[PoolTask]] = {}
    seen: dict[str, str] = {}
    duplicates: list[Duplicate] = []
    for path in sorted(expand_task_dirs(tasks), key=str):
        task = load_task(path)
        digest = task.content_hash()
        if digest in seen:
            duplicates.append({"path": str(path), "same_as": seen[digest]})
            continue
        seen[digest] = str(path)
        category = _category(task.config) or UNCATEGORIZED
        by_category.setdefault(category, []).append({"task": task.name, "path": str(path), "hash": digest,
                                                     "category": category})
    return by_category, duplicates


def seed_pool(tasks: list[Path], out_dir: Path, per_category: int, *, categories: list[str] | None = None,
              seed: int = 0, overwrite: bool = False) -> SeedPool:
    """Draw `per_category` tasks from each category (all found ones unless `categories`), copy them to
    `out_dir/tasks/` and write `out_dir/pool.json`; returns that document."""
    if per_category < 1:
        raise UserError(f"--per-category must be at least 1, got {per_category}")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise UserError(f"{out_dir} exists and is not empty; choose another --out or pass --force")
        from envevo.store import check_replaceable

        check_replaceable(out_dir, marker=POOL_FILE, what="seed pool")
    by_category, duplicates = categorize(tasks)
    if not by_category:
        raise UserError("no task dirs found among the arguments; pass task dirs or folders of them")
    known = sorted(c for c in by_category if c != UNCATEGORIZED)
    wanted = list(dict.fromkeys(categories)) if categories else known
    if not wanted:
        raise UserError("no task has a [metadata] category; set one in each task.toml, or name them with --categories")
    unknown = [c for c in wanted if c not in by_category]
    if unknown:
        raise UserError(f"no task has category {', '.join(map(repr, unknown))}; the tasks have: "
                        f"{', '.join(known) or 'none'}")
    short = {c: len(by_category[c]) for c in wanted if len(by_category[c]) < per_category}
    if short:
        listed = ", ".join(f"{c} has {n}" for c, n in sorted(short.items()))
        raise UserError(f"too few tasks for --per-category {per_category}: {listed}; lower --per-category or leave "
                        "those out with --categories")
    rng = random.Random(f"envevo-seed-pool|{seed}")
    drawn = {c: sorted(rng.sample(by_category[c], per_category), key=lambda t: t["path"]) for c in sorted(wanted)}
    if out_dir.exists() and overwrite:
        shutil.rmtree(out_dir)
    (out_dir / "tasks").mkdir(parents=True)
    names: set[str] = set()
    pool: list[PooledTask] = []
    for chosen in drawn.values():
        for t in chosen:
            name = Path(t["path"]).name
            if name in names:  # two sources share a dir name: keep both, apart
                name = f"{name}-{t['hash'][:8]}"
            names.add(name)
            shutil.copytree(t["path"], out_dir / "tasks" / name, symlinks=True)
            pool.append({**t, "pool_path": f"tasks/{name}"})
    doc: SeedPool = {
        "per_category": per_category,
        "seed": seed,
        "categories": sorted(wanted),
        "size": len(pool),
        "composition": {c: {"available": len(by_category[c]), "drawn": per_category} for c in sorted(wanted)},
        "left_out": {c: len(ts) for c, ts in sorted(by_category.items()) if c not in wanted},
        "duplicates": duplicates,
        "tasks": pool,
    }
    (out_dir / POOL_FILE).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return doc
