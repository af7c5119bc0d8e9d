"""Exports: a Harbor dataset folder that loads task by task, and the flat JSONL/Parquet index."""

from __future__ import annotations

import builtins
import json
import tomllib
from pathlib import Path

import pytest

from envevo.errors import UserError
from envevo.store import EXPORT_MARKER, FLAT_COLUMNS, LineageStore, export_flat, export_harbor
from envevo.task import load_task, looks_like_task
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of


@pytest.fixture
def store(tmp_path: Path):
    with LineageStore.open(tmp_path / "run") as s:
        a = s.create_lineage("envevo-tests/alpha", tiny_task("alpha"), trace=trace_of(1), difficulty=difficulty_of(1))
        b = s.create_lineage("beta", tiny_task("beta"), trace=trace_of(1), difficulty=difficulty_of(1))
        for g in (1, 2, 3):
            s.commit_generation(
                a,
                g,
                tiny_task("alpha", f"alpha {g}"),
                direction="length",
                effort="high",
                trace=trace_of(g + 1),
                difficulty=difficulty_of(g + 1),
                verified=True,
            )
        s.commit_generation(
            b, 1, tiny_task("beta", "beta 1", env="RUN true\n"), direction="skill", effort="low", verified=False
        )
        s.finish_lineage(b, "terminated", "all directions failed")
        yield s


def test_harbor_export_one_loadable_task_per_version(store: LineageStore, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    written = export_harbor(store, out)
    names = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert names == ["alpha__g00", "alpha__g01", "alpha__g02", "alpha__g03", "beta__g00", "beta__g01"]
    assert sorted(p.name for p in written) == names
    task_names = set()
    for v in store.versions():
        d = out / f"{v.lineage_id}__g{v.generation:02d}"
        assert looks_like_task(d)
        task = load_task(d)
        original = store.load_version_task(v.task_hash)
        # Same files; only task.toml differs (unique name + provenance).
        assert {k: f.data for k, f in task.files.items()} == {k: f.data for k, f in original.files.items()}
        meta = task.envevo_metadata["lineage"]
        assert (meta["id"], meta["generation"], meta["version"]) == (v.lineage_id, v.generation, v.task_hash)
        assert meta.get("parent") == v.parent_hash
        task_names.add(task.name)
    assert len(task_names) == 6  # harbor and `envevo verify` need unique task names
    assert load_task(out / "alpha__g02").name == "envevo-tests/alpha__g02"
    # tasks only, and the marker that lets a later --force replace this export (and nothing else)
    assert not [p for p in out.iterdir() if p.name != EXPORT_MARKER and (p.name.startswith(".") or not p.is_dir())]


def test_harbor_export_refuses_to_clobber_and_can_filter(store: LineageStore, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        export_harbor(store, out)
    assert (out / "keep.txt").read_text() == "mine"
    with pytest.raises(UserError, match="not a previous envevo export"):
        export_harbor(store, out, overwrite=True)  # --force replaces only what export wrote
    assert (out / "keep.txt").read_text() == "mine"
    out = tmp_path / "dataset2"
    export_harbor(store, out)
    export_harbor(store, out, lineage_id="beta", overwrite=True)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["beta__g00", "beta__g01"]
    with pytest.raises(UserError, match="no lineage 'gamma'"):
        export_harbor(store, tmp_path / "other", lineage_id="gamma")
    assert not (tmp_path / "other").exists()


def test_jsonl_export_columns(store: LineageStore, tmp_path: Path) -> None:
    path = export_flat(store, tmp_path / "index.jsonl", "jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 6 and all(list(r) == list(FLAT_COLUMNS) for r in rows)
    for required in (
        "lineage",
        "seed",
        "generation",
        "direction",
        "effort",
        "task_hash",
        "L",
        "D_T",
        "scenario_novelty",
        "skill_rarity",
        "mutated",
        "verified",
        "task_dir",
    ):
        assert required in FLAT_COLUMNS
    a3 = next(r for r in rows if r["lineage"] == "alpha" and r["generation"] == 3)
    assert (
        a3["seed"],
        a3["direction"],
        a3["effort"],
        a3["L"],
        a3["D_T"],
        a3["scenario_novelty"],
        a3["skill_rarity"],
    ) == ("envevo-tests/alpha", "length", "high", 4, 8.0, 6.0, 2.0)
    assert a3["mutated"] == ["instruction"] and a3["verified"] is True and a3["export_name"] == "alpha__g03"
    assert load_task(a3["task_dir"]).content_hash() == a3["task_hash"]
    b1 = next(r for r in rows if r["lineage"] == "beta" and r["generation"] == 1)
    assert (b1["status"], b1["L"], b1["D_T"], b1["mutated"], b1["verified"]) == (
        "terminated",
        None,
        None,
        ["instruction", "environment"],
        False,
    )
    seed = next(r for r in rows if r["lineage"] == "beta" and r["generation"] == 0)
    assert seed["direction"] is None and seed["parent_hash"] is None and seed["mutated"] == []


def test_flat_export_into_a_folder(store: LineageStore, tmp_path: Path) -> None:
    path = export_flat(store, tmp_path / "out", "jsonl", lineage_id="beta")
    assert path == tmp_path / "out" / "versions.jsonl"
    assert [json.loads(line)["generation"] for line in path.read_text().splitlines()] == [0, 1]


def test_parquet_export_columns(store: LineageStore, tmp_path: Path) -> None:
    import pyarrow.parquet as pq  # a dev dependency: the export must be tested, not skipped

    path = export_flat(store, tmp_path / "index.parquet", "parquet")
    table = pq.read_table(path)
    assert table.column_names == list(FLAT_COLUMNS) and table.num_rows == 6
    rows = table.to_pylist()
    a3 = next(r for r in rows if r["lineage"] == "alpha" and r["generation"] == 3)
    assert (a3["L"], a3["D_T"], a3["mutated"], a3["verified"]) == (4, 8.0, ["instruction"], True)
    import pyarrow as pa

    mutated_type = table.schema.field("mutated").type
    assert pa.types.is_list(mutated_type) and pa.types.is_string(mutated_type.value_type)


def test_parquet_without_pyarrow_is_one_clear_error(store: LineageStore, tmp_path: Path, monkeypatch) -> None:
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError("no pyarrow")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(UserError, match="pip install pyarrow"):
        export_flat(store, tmp_path / "x.parquet", "parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_exported_task_toml_is_current_harbor(store: LineageStore, tmp_path: Path) -> None:
    export_harbor(store, tmp_path / "d")
    cfg = tomllib.loads((tmp_path / "d" / "alpha__g01" / "task.toml").read_text())
    assert cfg["schema_version"] and cfg["task"]["name"] == "envevo-tests/alpha__g01"
    assert cfg["metadata"]["envevo"]["lineage"]["direction"] == "length"


def test_rl_export_is_what_the_trainer_adapters_load(store: LineageStore, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from envevo.schedule import export_rl

    paths, index = export_rl(store, tmp_path / "rl")
    rows = pq.read_table(index).to_pylist()
    versions = store.versions()
    assert len(rows) == len(versions) == len(paths)
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    for row, v in zip(rows, versions, strict=True):
        assert row["env_id"] == f"{v.lineage_id}__g{v.generation:02d}" == row["extra_info"]["env_id"]
        assert (row["lineage"], row["generation"], row["version"]) == (v.lineage_id, v.generation, v.task_hash)
        assert row["D_T"] == pytest.approx(v.D_T)
        assert load_task(row["task_dir"]).name.endswith(row["env_id"])
    with pytest.raises(UserError):
        export_rl(store, tmp_path / "rl")  # never clobbers a previous export
