"""`--force` replaces only what envevo wrote for the same purpose (issue 36 item 7): `export --force` at the run
itself, at its parent, at a folder holding a run or at any unrelated non-empty folder is refused in one line and
nothing is deleted; a previous export is replaced."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.export_cmd import export
from envevo.cli.seed_cmd import seed_app
from envevo.store import EXPORT_MARKER, LineageStore
from tests.store.test_store_support import tiny_task

app = typer.Typer()
app.command("export")(export)
app.add_typer(seed_app, name="seed")
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def run(tmp_path: Path) -> Path:
    with LineageStore.open(tmp_path / "runs" / "run") as s:
        s.create_lineage("alpha", tiny_task("alpha"), verified=True)
    return tmp_path / "runs" / "run"


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("fmt", ["harbor", "rl"])
@pytest.mark.parametrize("where", ["run", "parent", "grandparent", "inside", "unrelated"])
def test_export_force_never_deletes_what_export_did_not_write(run: Path, tmp_path: Path, where: str,
                                                              fmt: str) -> None:
    (tmp_path / "unrelated").mkdir()
    (tmp_path / "unrelated" / "notes.txt").write_text("mine")
    out = {"run": run, "parent": run.parent, "grandparent": tmp_path, "inside": run / "tasks",
           "unrelated": tmp_path / "unrelated"}[where]
    before = _tree(tmp_path)
    res = invoke("export", run, "--out", out, "--force", "--format", fmt)
    assert res.exit_code == 2, res.output
    assert "refusing to replace" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert _tree(tmp_path) == before
    with LineageStore.open(run, create=False) as s:  # the run is intact
        assert [lin.id for lin in s.lineages()] == ["alpha"]


@pytest.mark.parametrize("fmt", ["harbor", "rl"])
def test_export_force_replaces_a_previous_export(run: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "ds"
    assert invoke("export", run, "--out", out, "--format", fmt).exit_code == 0
    assert (out / EXPORT_MARKER).is_file()
    (out / "stale").mkdir()
    res = invoke("export", run, "--out", out, "--format", fmt, "--force")
    assert res.exit_code == 0, res.output
    assert (out / EXPORT_MARKER).is_file()
    if fmt == "harbor":
        assert not (out / "stale").exists()


def test_a_previous_export_that_now_holds_a_run_is_refused(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert invoke("export", run, "--out", out).exit_code == 0
    with LineageStore.open(out / "nested-run") as s:
        s.create_lineage("beta", tiny_task("beta"))
    res = invoke("export", run, "--out", out, "--force")
    assert res.exit_code == 2 and "holds a run store" in res.output
    assert (out / "nested-run" / "store.sqlite").is_file()


def test_seed_procedural_force_replaces_only_a_task(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "main.py").write_text("print('mine')\n")
    res = invoke("seed", "procedural", tmp_path / "project", "--force")
    assert res.exit_code == 2 and "refusing to replace" in res.output, res.output
    assert (tmp_path / "project" / "main.py").read_text() == "print('mine')\n"
    assert invoke("seed", "procedural", tmp_path / "t").exit_code == 0
    assert invoke("seed", "procedural", tmp_path / "t", "--force", "--seed", "1").exit_code == 0
