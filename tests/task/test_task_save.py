"""Saving: current Harbor format, nothing lost, modes kept, envevo metadata round-trips."""

from __future__ import annotations

import os
import shutil
import stat
import tomllib
from pathlib import Path

import pytest

from envevo.errors import TaskError
from envevo.task import Task, dir_hash, load_task, save

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"
ALL = ["harbor-basic", "harbor-legacy", "harbor-image", "harbor-multistep", "harbor-verifier-env", "tb1-basic", "tb1-compose"]


@pytest.mark.parametrize("name", ALL)
def test_save_then_load_round_trips(name: str, tmp_path: Path) -> None:
    task = load_task(FIXTURES / name)
    out = save(task, tmp_path / "out")
    again = load_task(out)
    assert again.source_format == "harbor"
    assert again.render_files() == task.render_files()
    assert again.config == task.config
    assert dir_hash(out) == task.content_hash()


@pytest.mark.parametrize("name", ALL)
def test_saved_task_is_current_schema(name: str, tmp_path: Path) -> None:
    out = save(load_task(FIXTURES / name), tmp_path / "out")
    config = tomllib.loads((out / "task.toml").read_text())
    assert config["schema_version"] == "1.4"
    assert "version" not in config


@pytest.mark.parametrize("name", ALL)
def test_saved_task_is_accepted_by_harbor(name: str, tmp_path: Path) -> None:
    harbor_task = pytest.importorskip("harbor.models.task.task")
    out = save(load_task(FIXTURES / name), tmp_path / "out")
    assert harbor_task.Task.is_valid_dir(out)
    assert harbor_task.Task(out).config.schema_version == "1.4"


def test_save_preserves_executable_bits_regardless_of_umask(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "harbor-basic")
    old = os.umask(0o077)
    try:
        out = save(task, tmp_path / "out")
    finally:
        os.umask(old)
    mode = (out / "tests" / "test.sh").stat().st_mode
    assert mode & stat.S_IXUSR and mode & stat.S_IXOTH
    assert not (out / "environment" / "data" / "input.csv").stat().st_mode & 0o111
    blob = "environment/data/blob.bin"
    assert (out / blob).read_bytes() == (FIXTURES / "harbor-basic" / blob).read_bytes()


def test_unchanged_task_toml_is_written_verbatim_with_comments(tmp_path: Path) -> None:
    out = save(load_task(FIXTURES / "harbor-basic"), tmp_path / "out")
    assert (out / "task.toml").read_bytes() == (FIXTURES / "harbor-basic" / "task.toml").read_bytes()


def test_unknown_config_fields_survive_save(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "harbor-image", tmp_path / "src")
    (src / "task.toml").write_text(
        'version = "1.0"\nsource = "somewhere"\nfuture_field = [1, 2]\n\n'
        '[environment]\ndocker_image = "ubuntu:24.04"\nnew_knob = { a = "b" }\n\n[custom]\nx = 1\n'
    )
    config = tomllib.loads((save(load_task(src), tmp_path / "out") / "task.toml").read_text())
    assert config["source"] == "somewhere" and config["future_field"] == [1, 2]
    assert config["environment"]["new_knob"] == {"a": "b"}
    assert config["custom"] == {"x": 1}


def test_envevo_metadata_round_trips_and_keeps_other_metadata(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "harbor-basic")
    assert task.envevo_metadata == {}
    meta = {"lineage": "abc", "generation": 3, "direction": "length", "scores": {"d_t": 12.5}, "parents": ["p1"]}
    task.set_envevo_metadata(meta)
    again = load_task(save(task, tmp_path / "out"))
    assert again.envevo_metadata == meta
    assert again.config["metadata"]["difficulty"] == "easy"
    again.update_envevo_metadata(generation=4)
    assert again.envevo_metadata["generation"] == 4 and again.envevo_metadata["lineage"] == "abc"


def test_envevo_metadata_accessor_returns_a_copy() -> None:
    task = load_task(FIXTURES / "tb1-basic")
    task.envevo_metadata["imported_from"] = "mutated"
    assert task.envevo_metadata["imported_from"] == "terminal-bench-1"


def test_clearing_envevo_metadata_removes_the_table() -> None:
    task = load_task(FIXTURES / "tb1-basic")
    task.set_envevo_metadata({})
    assert "envevo" not in task.config["metadata"]
    assert "metadata.envevo" not in task.config_toml()


def test_envevo_metadata_rejects_values_toml_cannot_hold() -> None:
    task = load_task(FIXTURES / "harbor-basic")
    with pytest.raises(TaskError, match="cannot be stored"):
        task.set_envevo_metadata({"bad": object()})
    assert task.envevo_metadata == {}


def test_save_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "harbor-basic")
    out = save(task, tmp_path / "out")
    with pytest.raises(TaskError, match="already exists"):
        save(load_task(FIXTURES / "harbor-image"), out)
    assert load_task(out).content_hash() == task.content_hash()
    save(load_task(FIXTURES / "harbor-image"), out, overwrite=True)
    assert not (out / "environment").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temp dirs left behind


def test_save_into_empty_existing_dir(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    save(load_task(FIXTURES / "harbor-basic"), tmp_path / "out")
    assert (tmp_path / "out" / "instruction.md").is_file()


def test_edits_through_task_api_are_saved(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "harbor-basic")
    task.write("tests/test_more.py", "def test_x():\n    pass\n")
    task.write("solution/helper.sh", "#!/bin/sh\necho hi\n")
    task.remove("environment/data/blob.bin")
    out = save(task, tmp_path / "out")
    assert (out / "tests" / "test_more.py").read_text().startswith("def test_x")
    assert os.access(out / "solution" / "helper.sh", os.X_OK)
    assert not (out / "environment" / "data" / "blob.bin").exists()


def test_writing_task_toml_through_the_api_reparses_config() -> None:
    task = load_task(FIXTURES / "harbor-image")
    task.write("task.toml", 'version = "1.0"\n[environment]\ndocker_image = "debian:12"\n')
    assert task.docker_image == "debian:12"
    assert task.config["schema_version"] == "1.4"


def test_memory_task_saves(tmp_path: Path) -> None:
    task = Task(config={"schema_version": "1.4", "environment": {"docker_image": "ubuntu:24.04"}})
    task.write("instruction.md", "Do it.\n")
    task.write("tests/test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    out = save(task, tmp_path / "t")
    assert load_task(out).content_hash() == task.content_hash()


def test_task_survives_a_json_round_trip() -> None:
    # Tasks cross process boundaries (workers, stores) as JSON; binary fixtures must survive.
    task = load_task(FIXTURES / "harbor-basic")
    again = Task.model_validate_json(task.model_dump_json())
    assert again.content_hash() == task.content_hash()
    assert again.files["environment/data/blob.bin"].data == task.files["environment/data/blob.bin"].data
