"""Exit codes that tell the truth, and one line for what a user's machine or paths cause (issue 36 item 9):
`evolve` exits 5 when the seed gate rejected every seed; `--resume` of a run that does not exist is refused; output
paths that are a file, under a missing folder or read-only are one line before any work."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.evolve_cmd import evolve
from envevo.cli.export_cmd import export
from envevo.cli.report_cmd import report
from envevo.errors import ExitCode
from envevo.store import LineageStore
from tests.cli.test_evolve_resume import _evolve, gate  # noqa: F401 (a fixture)
from tests.store.test_store_support import tiny_task

runner = CliRunner()
app = typer.Typer()
app.command("evolve")(evolve)
app.command("export")(export)
app.command("report")(report)


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_exit_codes_are_the_agreed_ones() -> None:
    assert [(c.name, int(c)) for c in ExitCode] == [("OK", 0), ("FAIL", 1), ("USAGE", 2), ("INCONCLUSIVE", 3),
                                                     ("WEAK", 4), ("ALL_SEEDS_REJECTED", 5)]


def test_evolve_exits_5_when_every_seed_was_rejected(tmp_path, gate) -> None:  # noqa: F811
    gate.update({"seed-7", "seed-8"})
    res = _evolve(tmp_path)
    assert res.exit_code == ExitCode.ALL_SEEDS_REJECTED, res.output
    assert "every seed was rejected" in res.stderr
    assert {s["status"] for s in json.loads(res.stdout)["lineages"]} == {"terminated"}  # the summary still printed
    gate.discard("seed-8")
    assert _evolve(tmp_path / "other").exit_code == 0  # one seed evolved: done what was asked


def test_resume_of_a_run_that_does_not_exist_is_refused(tmp_path) -> None:
    (tmp_path / "seed").mkdir()
    res = invoke("evolve", tmp_path / "seed", "--run", tmp_path / "typo", "--resume")
    assert res.exit_code == 2 and "--resume" in res.output and "holds no run" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "typo").exists()


@pytest.fixture
def run(tmp_path: Path) -> Path:
    with LineageStore.open(tmp_path / "run") as s:
        s.create_lineage("alpha", tiny_task("alpha"), verified=True)
    return tmp_path / "run"


@pytest.fixture
def read_only(tmp_path: Path):
    """A read-only folder, also for root (a read-only tmpfs mount); skipped where mounting is not allowed."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True).returncode:
        pytest.skip("cannot mount a read-only tmpfs here")
    yield ro
    subprocess.run(["umount", str(ro)], check=True)


def _one_line(res, *words: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, res.output
    for w in words:
        assert w in res.output, res.output


def test_output_paths_that_cannot_be_written_are_one_line(run, tmp_path, read_only) -> None:
    (tmp_path / "afile").write_text("x")
    seed = tmp_path / "seed"
    seed.mkdir()
    _one_line(invoke("report", run, "--out", tmp_path / "missing" / "r.html"), "does not exist")
    _one_line(invoke("report", run, "--out", tmp_path / "afile" / "r.html"), "does not exist")
    _one_line(invoke("report", run, "--out", read_only / "r.html"), "not writable")
    _one_line(invoke("export", run, "--out", tmp_path / "afile"), "is a file")
    _one_line(invoke("export", run, "--out", read_only / "ds"), "not writable")
    _one_line(invoke("export", run, "--out", tmp_path / "afile" / "ds"), "is a file, not a folder")
    _one_line(invoke("export", run, "--format", "jsonl", "--out", tmp_path / "missing" / "v.jsonl"), "does not exist")
    _one_line(invoke("evolve", seed, "--run", tmp_path / "afile"), "is a file")
    _one_line(invoke("evolve", seed, "--run", read_only / "run"), "not writable")
    assert os.listdir(read_only) == []


def test_seeds_select_no_verify_does_not_ignore_model_silently(tmp_path) -> None:
    from envevo.cli.main import app as main_app

    (tmp_path / "run").mkdir()
    res = runner.invoke(main_app, ["seeds", "select", str(tmp_path), "--run", str(tmp_path / "run"), "--no-verify",
                                   "--model", "openai:gpt-4.1"])
    assert res.exit_code == 2 and "--model is for the verifiers" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_full_disk_is_one_line_and_the_run_resumes(tmp_path, gate) -> None:  # noqa: F811
    run = tmp_path / "run"
    run.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(run)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        res = _evolve(tmp_path)
        assert res.exit_code == 2 and "the disk is full" in res.stderr, res.output
        assert "Traceback" not in res.output and res.stderr.count("disk is full") == 1
        subprocess.run(["mount", "-o", "remount,size=40m", str(run)], check=True)  # space freed
        done = _evolve(tmp_path, "--resume")
        assert done.exit_code == 0, done.output
        assert {s["status"] for s in json.loads(done.stdout)["lineages"]} == {"done"}
    finally:
        subprocess.run(["umount", str(run)], check=True)
