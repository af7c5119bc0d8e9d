"""Issue 36: task.toml and instruction problems a careful user expects to hear about, in one line each."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from envevo.errors import TaskError
from envevo.sandbox import runnable_copy
from envevo.task import ImageMap, TaskWarning, lf_scripts, load_task
from tests.conftest import FIXTURES

SOUND = FIXTURES / "realistic" / "python-slim"


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SOUND, tmp_path / "t"))


def test_an_empty_instruction_is_refused(task_dir):
    (task_dir / "instruction.md").write_text(" \n\n")
    with pytest.raises(TaskError, match=r"instruction.md is empty; write what the agent is asked to do"):
        load_task(task_dir)


@pytest.mark.parametrize("version", ["99.0", "2.0", "one"])
def test_a_schema_of_another_major_is_refused_naming_the_supported_ones(task_dir, version):
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace('version = "1.0"', f'schema_version = "{version}"'))
    with pytest.raises(TaskError, match=rf'schema_version "{version}" is not one envevo reads \(it reads 1.0 to 1.4\)'):
        load_task(task_dir)


def test_unknown_top_level_keys_and_a_newer_minor_warn_one_line_each(task_dir):
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace('version = "1.0"', 'schema_version = "1.9"\nreward_mode = "max"')
                    + "\n[enviroment]\ncpus = 2\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_task(task_dir)
    said = [str(w.message) for w in caught if issubclass(w.category, TaskWarning)]
    assert len(said) == 3
    assert 'schema_version "1.9" is newer than 1.4' in said[0]
    assert "unknown top-level key 'reward_mode'" in said[1] and "unknown top-level key 'enviroment'" in said[2]
    assert all("\n" not in s for s in said)


def test_a_known_task_loads_without_warnings(task_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TaskWarning)
        load_task(task_dir)


def test_a_task_toml_that_is_a_directory_is_named(task_dir):
    (task_dir / "task.toml").unlink()
    (task_dir / "task.toml").mkdir()
    with pytest.raises(TaskError, match=r"task.toml is a directory, not a file"):
        load_task(task_dir)


def test_crlf_scripts_are_made_lf_in_the_runnable_copy_and_stated(task_dir, tmp_path, monkeypatch):
    test_sh = task_dir / "tests" / "test.sh"
    test_sh.write_bytes(test_sh.read_bytes().replace(b"\n", b"\r\n"))
    task = load_task(task_dir)
    files, changed = lf_scripts(task.files)
    assert changed == ["tests/test.sh"] and b"\r" not in files["tests/test.sh"].data
    copy, stated = runnable_copy(task, "modal", ImageMap(), tmp_path / "runnable")  # not a local engine: no stand-ins
    assert any(s.startswith("CRLF line ends made LF in tests/test.sh") for s in stated)
    assert b"\r" not in (copy / "tests" / "test.sh").read_bytes()
    assert b"\r\n" in test_sh.read_bytes()  # the user's file is untouched
