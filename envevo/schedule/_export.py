"""The export the RL trainers' adapters load: a Harbor dataset folder of a run's lineages plus a Parquet index
that maps every environment back to its lineage and generation (the curriculum's order).

One export serves every trainer: ``OUT/index.parquet`` is verl's train file (``prompt``, ``data_source``,
``reward_model``, ``extra_info``) and the pool of SkyRL's and TRL's adapters; ``OUT/tasks/`` is the Harbor
dataset folder SkyRL's Harbor generator and TRL's ``HarborSpec(OUT)`` load.

The dataset folder itself is the store's Harbor export (``envevo.store.export_harbor``); this module adds what
only a trainer needs, so it sits with the schedulers and adapters that read it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store loads when an export runs, not with the schedulers
    from envevo.store import LineageStore

RL_INDEX = "index.parquet"


def export_rl(
    store: LineageStore, out_dir: str | os.PathLike[str], *, lineage_id: str | None = None, overwrite: bool = False
) -> tuple[list[Path], Path]:
    """What the RL trainers' adapters load: a Harbor dataset folder `OUT/tasks/` and `OUT/index.parquet`.

    One index row per committed version: `env_id` (its dataset name), `lineage`, `generation`, `version` (the
    content hash), `D_T`, `task_dir` (inside OUT/tasks), `task_hash` (the exported dir's content hash: the adapters
    refuse a row whose dir changed since); verl's columns `prompt` (the instruction as one user
    message), `data_source` ("envevo"), `reward_model` {style "harbor", ground_truth = task_dir} and
    `extra_info` {index, env_id, lineage, generation, task_dir}, the struct verl copies into every rollout so
    results map back to environments.
    """
    from envevo.store import EXPORT_MARKER, StoreError, check_replaceable, export_harbor, flat_rows, write_marker
    from envevo.task import content_hash

    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise StoreError("the rl export needs pyarrow: run `pip install pyarrow`") from None
    out = Path(out_dir).expanduser().absolute()
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise StoreError(f"cannot export to {out}: it exists and is not empty; choose a new path or pass --force "
                         "(which replaces only a previous export)")
    if overwrite:
        check_replaceable(out, marker=EXPORT_MARKER, what="envevo export")
    paths = export_harbor(store, out / "tasks", lineage_id=lineage_id, overwrite=overwrite)
    rows = flat_rows(store, lineage_id)
    task_dirs = [str(out / "tasks" / r["export_name"]) for r in rows]
    instructions = [(Path(d) / "instruction.md").read_text(encoding="utf-8") for d in task_dirs]
    table = pa.table({
        "env_id": [r["export_name"] for r in rows],
        "lineage": [r["lineage"] for r in rows],
        "generation": pa.array([r["generation"] for r in rows], pa.int64()),
        "version": [r["task_hash"] for r in rows],
        "D_T": pa.array([r["D_T"] for r in rows], pa.float64()),
        "task_dir": task_dirs,
        "task_hash": [content_hash(d) for d in task_dirs],
        "prompt": [[{"role": "user", "content": text}] for text in instructions],
        "data_source": ["envevo"] * len(rows),
        "reward_model": [{"style": "harbor", "ground_truth": d} for d in task_dirs],
        "extra_info": [
            {"index": i, "env_id": r["export_name"], "lineage": r["lineage"], "generation": r["generation"],
             "task_dir": d}
            for i, (r, d) in enumerate(zip(rows, task_dirs, strict=True))
        ],
    })
    index = out / RL_INDEX
    tmp = index.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, index)  # the index appears whole or not at all
    write_marker(out, EXPORT_MARKER, format="rl", run=str(store.run_dir))
    return paths, index
