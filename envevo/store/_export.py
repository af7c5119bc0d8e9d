"""Exports: a Harbor dataset folder, and a flat index (JSONL or Parquet) of every committed version."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from envevo.store._models import StoreError, Version
from envevo.store._overwrite import EXPORT_MARKER, check_replaceable, write_marker
from envevo.store._store import LineageStore

FlatFormat = Literal["jsonl", "parquet"]

#: Columns of the flat index, in order.
FLAT_COLUMNS: tuple[str, ...] = (
    "run_dir",
    "lineage",
    "seed",
    "status",
    "generation",
    "direction",
    "effort",
    "task_hash",
    "parent_hash",
    "L",
    "D_T",
    "scenario_novelty",
    "skill_rarity",
    "estimator",
    "goal_sim_seed",
    "goal_sim_parent",
    "instruction_sim_seed",
    "instruction_sim_parent",
    "drift_seed",
    "drift_parent",
    "drift_measure",
    "mutated",
    "verified",
    "trace",
    "task_dir",
    "export_name",
    "created_at",
)


def export_name(lineage_id: str, generation: int) -> str:
    """The dataset name of a version: ``<lineage>__g<NN>``."""
    return f"{lineage_id}__g{generation:02d}"


def flat_rows(store: LineageStore, lineage_id: str | None = None) -> list[dict[str, Any]]:
    """One dict per committed version (of one lineage, or all), keys :data:`FLAT_COLUMNS`."""
    lineages = {lin.id: lin for lin in store.lineages()}
    rows = []
    for v in store.versions(lineage_id):
        lin = lineages[v.lineage_id]
        fields = version_fields(v)
        rows.append(
            {
                "run_dir": str(store.run_dir),
                "lineage": v.lineage_id,
                "seed": lin.seed_name,
                "status": lin.status.value,
                "generation": fields.pop("generation"),
                "direction": fields.pop("direction"),
                "effort": fields.pop("effort"),
                "task_hash": fields.pop("task_hash"),
                "parent_hash": fields.pop("parent_hash"),
                **fields,
                "trace": v.trace.pretty() if v.trace else None,
                "task_dir": str(store.paths.task_dir(v.task_hash)),
                "export_name": export_name(v.lineage_id, v.generation),
                "created_at": v.created_at,
            }
        )
    return rows


def version_fields(v: Version) -> dict[str, Any]:
    """The per-version facts every listing shows: where it sits, what changed, how hard it is."""
    d = v.difficulty
    return {
        "generation": v.generation,
        "direction": v.direction,
        "effort": v.effort,
        "task_hash": v.task_hash,
        "parent_hash": v.parent_hash,
        "L": v.L,
        "D_T": d.D_T if d else None,
        "scenario_novelty": d.scenario_novelty if d else None,
        "skill_rarity": d.skill_rarity if d else None,
        "estimator": d.estimator if d else None,
        # Semantic drift (envevo/trace/_drift.py): cosine similarities, and drift = 1 − instruction similarity.
        "goal_sim_seed": v.drift.goal_seed if v.drift else None,
        "goal_sim_parent": v.drift.goal_parent if v.drift else None,
        "instruction_sim_seed": v.drift.instruction_seed if v.drift else None,
        "instruction_sim_parent": v.drift.instruction_parent if v.drift else None,
        "drift_seed": v.drift.drift_seed if v.drift else None,
        "drift_parent": v.drift.drift_parent if v.drift else None,
        "drift_measure": v.drift.measure if v.drift else None,
        "mutated": list(v.mutated),
        "verified": v.verified,
    }


def export_harbor(
    store: LineageStore, out_dir: str | os.PathLike[str], *, lineage_id: str | None = None, overwrite: bool = False
) -> list[Path]:
    """Write a Harbor dataset folder: one task dir per committed version (seeds included), ``<lineage>__g<NN>``.

    Each task's ``[task].name`` becomes ``<org/>lineage__gNN`` so names are unique in the dataset, and
    ``[metadata.envevo.lineage]`` records where it came from. The folder appears complete or not at all.
    """
    from envevo.task import replace_dir, save

    out = Path(out_dir).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise StoreError(f"cannot export to {out}: a file is in the way; choose a directory path")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise StoreError(f"cannot export to {out}: it exists and is not empty; choose a new path or pass --force "
                         "(which replaces only a previous export)")
    if overwrite:
        check_replaceable(out, marker=EXPORT_MARKER, what="envevo export")
    lineages = {lin.id: lin for lin in store.lineages()}
    if lineage_id is not None:
        store.lineage(lineage_id)
    versions = store.versions(lineage_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    written = []
    try:
        for v in versions:
            task = store.load_version_task(v.task_hash)
            name = export_name(v.lineage_id, v.generation)
            config = task.config
            if isinstance(config.get("task"), dict) and isinstance(config["task"].get("name"), str):
                new = {**config, "task": {**config["task"], "name": _dataset_task_name(config["task"]["name"], name)}}
                task.set_config(new)
            origin: dict[str, Any] = {
                "id": v.lineage_id,
                "seed": lineages[v.lineage_id].seed_name,
                "generation": v.generation,
                "version": v.task_hash,
            }
            if v.parent_hash:
                origin["parent"] = v.parent_hash
            if v.direction:
                origin["direction"] = v.direction
            task.update_envevo_metadata(lineage=origin)
            save(task, tmp / name)
            written.append(out / name)
        write_marker(tmp, EXPORT_MARKER, format="harbor", run=str(store.run_dir))
        os.chmod(tmp, 0o755)
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return written


def _dataset_task_name(original: str, name: str) -> str:
    org, _, _ = original.rpartition("/")
    return f"{org}/{name}" if org else name


def flat_path(path: str | os.PathLike[str], fmt: FlatFormat) -> Path:
    """``path`` itself when it ends in .<fmt>; otherwise the directory ``path`` holding ``versions.<fmt>``."""
    p = Path(path).expanduser().absolute()
    return p if p.suffix == f".{fmt}" else p / f"versions.{fmt}"


def export_flat(
    store: LineageStore,
    path: str | os.PathLike[str],
    format: FlatFormat = "jsonl",
    *,
    lineage_id: str | None = None,  # noqa: A002
) -> Path:
    """Write the flat index of every committed version (or one lineage's) as JSONL or Parquet; returns the file."""
    if format not in ("jsonl", "parquet"):
        raise StoreError(f"unknown flat export format {format!r}; choose jsonl or parquet")
    target = flat_path(path, format)
    if target.exists() and target.is_dir():
        raise StoreError(f"cannot write {target}: a directory is in the way")
    rows = flat_rows(store, lineage_id)
    if format == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise StoreError(
                "Parquet export needs pyarrow: run `pip install pyarrow` (or use --format jsonl)"
            ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if format == "jsonl":
            with tmp.open("w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, sort_keys=False) + "\n")
        else:
            schema = pa.schema(
                [
                    ("run_dir", pa.string()),
                    ("lineage", pa.string()),
                    ("seed", pa.string()),
                    ("status", pa.string()),
                    ("generation", pa.int64()),
                    ("direction", pa.string()),
                    ("effort", pa.string()),
                    ("task_hash", pa.string()),
                    ("parent_hash", pa.string()),
                    ("L", pa.int64()),
                    ("D_T", pa.float64()),
                    ("scenario_novelty", pa.float64()),
                    ("skill_rarity", pa.float64()),
                    ("estimator", pa.string()),
                    ("goal_sim_seed", pa.float64()),
                    ("goal_sim_parent", pa.float64()),
                    ("instruction_sim_seed", pa.float64()),
                    ("instruction_sim_parent", pa.float64()),
                    ("drift_seed", pa.float64()),
                    ("drift_parent", pa.float64()),
                    ("drift_measure", pa.string()),
                    ("mutated", pa.list_(pa.string())),
                    ("verified", pa.bool_()),
                    ("trace", pa.string()),
                    ("task_dir", pa.string()),
                    ("export_name", pa.string()),
                    ("created_at", pa.string()),
                ]
            )
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
