"""`envevo task hash|diff|import-tb1`, driven through typer's CliRunner."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import typer
from typer.testing import CliRunner

from envevo.cli.task_cmd import task_app
from envevo.task import load_task

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"
app = typer.Typer()
app.add_typer(task_app, name="task")
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["task", *map(str, args)])


def test_hash_prints_the_library_hash() -> None:
    result = run("hash", FIXTURES / "harbor-basic")
    assert result.exit_code == 0
    assert result.stdout.strip() == load_task(FIXTURES / "harbor-basic").content_hash()


def test_hash_json() -> None:
    result = run("hash", FIXTURES / "tb1-basic", "--json")
    data = json.loads(result.stdout)
    assert data["format"] == "terminal-bench-1"
    assert data["hash"] == load_task(FIXTURES / "tb1-basic").content_hash()
    assert data["files"] == 8  # 7 converted files + task.toml


def test_hash_of_bad_path_is_one_line_exit_2(tmp_path: Path) -> None:
    result = run("hash", tmp_path / "missing")
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


def test_diff_shows_components_then_unified_diffs(tmp_path: Path) -> None:
    b = shutil.copytree(FIXTURES / "harbor-basic", tmp_path / "b")
    (b / "instruction.md").write_text("Sum the amounts and round.\n")
    (b / "tests" / "test_new.py").write_text("def test(): pass\n")
    result = run("diff", FIXTURES / "harbor-basic", b)
    assert result.exit_code == 0
    out = result.stdout
    assert "instruction" in out and "verification" in out and "tests/test_new.py" in out
    assert "+Sum the amounts and round." in out
    assert out.index("verification") < out.index("+Sum the amounts")


def test_diff_json_and_component_filter(tmp_path: Path) -> None:
    b = shutil.copytree(FIXTURES / "harbor-basic", tmp_path / "b")
    (b / "instruction.md").write_text("Other.\n")
    (b / "environment" / "data" / "blob.bin").write_bytes(b"\x00new")
    data = json.loads(run("diff", FIXTURES / "harbor-basic", b, "--json").stdout)
    assert data["mutated"] == ["instruction", "environment"]
    only = json.loads(run("diff", FIXTURES / "harbor-basic", b, "--json", "--component", "environment").stdout)
    assert only["mutated"] == ["environment"]
    assert only["changes"][0]["diff"] == "binary file environment/data/blob.bin differs"


def test_diff_of_identical_tasks() -> None:
    result = run("diff", FIXTURES / "harbor-basic", FIXTURES / "harbor-basic")
    assert result.exit_code == 0 and "no differences" in result.stdout


def test_diff_unknown_component_is_a_user_error() -> None:
    result = run("diff", FIXTURES / "harbor-basic", FIXTURES / "harbor-basic", "-c", "tests")
    assert result.exit_code == 2
    assert "unknown component 'tests'" in result.output and "verification" in result.output


def test_import_tb1_writes_a_loadable_harbor_task(tmp_path: Path) -> None:
    result = run("import-tb1", FIXTURES / "tb1-basic", tmp_path / "out", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    task = load_task(tmp_path / "out")
    assert task.source_format == "harbor"
    assert data["hash"] == task.content_hash()
    assert (tmp_path / "out" / "tests" / "test.sh").stat().st_mode & 0o111


def test_import_tb1_folder_of_tasks(tmp_path: Path) -> None:
    src = tmp_path / "tb1"
    src.mkdir()
    for name in ("tb1-basic", "tb1-compose"):
        shutil.copytree(FIXTURES / name, src / name)
    result = run("import-tb1", src, tmp_path / "out")
    assert result.exit_code == 0
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"tb1-basic", "tb1-compose"}


def test_import_tb1_refuses_existing_dest_without_force(tmp_path: Path) -> None:
    assert run("import-tb1", FIXTURES / "tb1-basic", tmp_path / "out").exit_code == 0
    again = run("import-tb1", FIXTURES / "tb1-basic", tmp_path / "out")
    assert again.exit_code == 2 and "already exists" in again.output
    assert run("import-tb1", FIXTURES / "tb1-basic", tmp_path / "out", "--force").exit_code == 0


def test_import_tb1_of_a_harbor_task_is_a_user_error(tmp_path: Path) -> None:
    result = run("import-tb1", FIXTURES / "harbor-basic", tmp_path / "out")
    assert result.exit_code == 2 and "already a Harbor task" in result.output
    assert not (tmp_path / "out").exists()
