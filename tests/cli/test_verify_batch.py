"""A batch never stops for one task (issue 36 item 10): `envevo verify folder` where some tasks are refused (a compose
file mounting the host's docker socket, a malformed task.toml, a folder without a task) gives each its one line, in
the table and in --json (status "refused", reason), and verifies every other; the exit code counts them (a refusal
is a failure, exit 1; all refused, exit 2). A path that does not exist is said at once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.errors import ExitCode, UserError
from envevo.verify import Verdict, VerifierReport
from tests.conftest import FIXTURES

runner = CliRunner()


@pytest.fixture
def fake_sandbox(monkeypatch):
    """No container: every runnable task passes; a task named copy-refused is refused by runnable_copy."""
    verified: list[str] = []

    async def verify_tasks(tasks, trials_dir, **kw):
        verified.extend(name for name, _ in tasks)
        return [Verdict(task=name, task_dir=d, ok=True, reports={n: VerifierReport(name=n, passed=True)
                                                                 for n in ("oracle", "invalid_test")})
                for name, d in tasks]

    def runnable_copy(task, env, mapping, dest):
        if task.source.name == "copy-refused":
            raise UserError("its base image cannot be stood in for here")
        return task.source, []

    monkeypatch.setattr("envevo.verify.verify_tasks", verify_tasks)
    monkeypatch.setattr("envevo.sandbox.runnable_copy", runnable_copy)
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    return verified


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    for name in ("good-a", "good-b", "socket", "bad-toml", "copy-refused"):
        shutil.copytree(FIXTURES / "runtime" / "hello", root / name)
    (root / "socket" / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build:\n      context: .\n    volumes:\n"
        "      - /var/run/docker.sock:/var/run/docker.sock\n")
    (root / "bad-toml" / "task.toml").write_text("[verifier\ntimeout_sec = 1\n")
    return root


def _verify(*args: object):
    return runner.invoke(app, ["verify", *map(str, args), "--red-team", "off", "--mutation", "off", "--repeats", "1"])


def test_every_refused_task_gets_its_line_and_the_others_are_verified(folder, tmp_path, fake_sandbox) -> None:
    res = _verify(folder, "--json", "--jobs-dir", tmp_path / "jobs")
    assert res.exit_code == ExitCode.FAIL, res.output
    rows = {r["task"]: r for r in json.loads(res.stdout)}
    assert sorted(fake_sandbox) == ["good-a", "good-b"]
    assert {t: r["status"] for t, r in rows.items()} == {"good-a": "ok", "good-b": "ok", "socket": "refused",
                                                         "bad-toml": "refused", "copy-refused": "refused"}
    assert "outside the task" in rows["socket"]["reason"] or "host" in rows["socket"]["reason"]
    assert "task.toml" in rows["bad-toml"]["reason"] and "stood in" in rows["copy-refused"]["reason"]
    table = _verify(folder, "--jobs-dir", tmp_path / "jobs2")
    assert table.exit_code == ExitCode.FAIL and table.stdout.count("│ refused ") == 3, table.output


def test_all_refused_is_exit_2_with_every_reason(folder, tmp_path, fake_sandbox) -> None:
    res = _verify(folder / "socket", folder / "bad-toml", "--jobs-dir", tmp_path / "jobs")
    assert res.exit_code == ExitCode.USAGE, res.output
    assert "socket" in res.stderr and "bad-toml" in res.stderr and "Traceback" not in res.output
    assert fake_sandbox == []


def test_a_missing_path_is_said_before_any_work(tmp_path, monkeypatch) -> None:
    def no_work(*a, **k):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr("envevo.sandbox.preflight", no_work)
    monkeypatch.setattr("envevo.api._check.verification_model", no_work)
    res = _verify(tmp_path / "nonexistent")
    assert res.exit_code == ExitCode.USAGE and "does not exist" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_audit_refuses_a_task_with_its_line_and_audits_the_others(folder, tmp_path, fake_sandbox, monkeypatch) -> None:
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    for name in ("good-a", "good-b"):  # the audit keeps one task per content: make each its own
        (folder / name / "instruction.md").write_text(f"{name}: " + (folder / name / "instruction.md").read_text())
    args = ["audit", str(folder), "--out", str(tmp_path / "audit"), "--red-team", "off", "--mutation", "off",
            "--repeats", "1"]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == ExitCode.FAIL, res.output  # a refusal counts as a failure
    doc = json.loads(res.stdout)
    assert sorted(n.rsplit("-", 1)[0] for n in fake_sandbox) == ["good-a", "good-b"]  # keyed by name and hash
    assert sorted(t["task"] for t in doc["tasks"]) == ["good-a", "good-b"]
    assert {r["task"]: r["status"] for r in doc["refused"]} == {"socket": "refused", "bad-toml": "refused",
                                                                "copy-refused": "refused"}
    table = runner.invoke(app, [*args, "--resume"])  # the audited tasks are kept; the refused ones said again
    assert table.exit_code == ExitCode.FAIL and table.stdout.count("│ refused ") == 3, table.output
    every = runner.invoke(app, ["audit", str(folder / "socket"), str(folder / "bad-toml"), "--out",
                                str(tmp_path / "audit2"), "--red-team", "off", "--mutation", "off"])
    assert every.exit_code == ExitCode.USAGE and "Traceback" not in every.output, every.output
