"""verify's summary counts machine limits apart from failures (issue 36 item 3): an inconclusive verdict (this host
could not run the task) is never added to the failures, and the summary says what inconclusive means; the exit code
is the worst status's."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.errors import ExitCode
from envevo.verify import Verdict, VerifierReport
from tests.conftest import FIXTURES

runner = CliRunner()
LIMIT = "inconclusive: a download from huggingface.co, which this host cannot reach"


def _verdict(name: str, d: Path) -> Verdict:
    passed = {n: VerifierReport(name=n, passed=True) for n in ("oracle", "invalid_test")}
    if name == "sound":
        return Verdict(task=name, task_dir=d, ok=True, reports=passed)
    if name == "limited":
        oracle = VerifierReport(name="oracle", passed=False, inconclusive=True, reasons=[LIMIT])
    else:
        oracle = VerifierReport(name="oracle", passed=False, reasons=["the reference solution scored 0.0"])
    return Verdict(task=name, task_dir=d, ok=False, reports=passed | {"oracle": oracle})


def _run(tmp_path: Path, monkeypatch, names: tuple[str, ...]):
    async def verify_tasks(tasks, trials_dir, **kw):
        return [_verdict(name, d) for name, d in tasks]

    monkeypatch.setattr("envevo.verify.verify_tasks", verify_tasks)
    monkeypatch.setattr("envevo.sandbox.runnable_copy", lambda task, env, mapping, dest: (task.source, []))
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    root = tmp_path / "tasks"
    for name in names:
        shutil.copytree(FIXTURES / "runtime" / "hello", root / name)
    return runner.invoke(app, ["verify", str(root), "--red-team", "off", "--mutation", "off", "--repeats", "1",
                               "--jobs-dir", str(tmp_path / "jobs")])


def test_an_inconclusive_verdict_is_counted_apart_from_the_failures(tmp_path, monkeypatch):
    res = _run(tmp_path, monkeypatch, ("broken", "limited", "sound"))
    said = " ".join(res.output.split())  # rich wraps the line at the terminal's width
    assert "3 task(s): 1 ok, 1 inconclusive, 1 fail (inconclusive: this host could not verify them" in said
    assert said.count("1 ok, 1 inconclusive, 1 fail") == 1  # counted once, not again on a line of its own
    assert res.exit_code == ExitCode.FAIL, res.output


def test_a_machine_limit_alone_exits_3_not_1(tmp_path, monkeypatch):
    res = _run(tmp_path, monkeypatch, ("limited", "sound"))
    said = " ".join(res.output.split())
    assert "2 task(s): 1 ok, 1 inconclusive (inconclusive: this host could not verify them" in said
    assert "fail" not in said
    assert res.exit_code == ExitCode.INCONCLUSIVE, res.output
