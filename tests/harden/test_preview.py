"""`audit` and `seeds select` say per task what `envevo harden` would fix, read from its files (no proof run), and
`--harden DIR` writes the proved copies through harden's own library function, reusing the audit's verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.errors import ExitCode
from envevo.harden import MARKER, HardenResult, preview_harden
from envevo.task import load_task
from envevo.verify import Verdict, VerifierReport
from tests.conftest import FIXTURES

PUBLIC = FIXTURES / "public"
SEEDS = Path(__file__).resolve().parents[2] / "examples" / "seeds"
runner = CliRunner()


def test_the_preview_names_what_harden_would_fix_or_why_not() -> None:
    pypi = preview_harden(load_task(PUBLIC / "tb2-pypi"))
    assert pypi.kind == "fixable"
    assert pypi.text == ("harden would fix: tests to a separate verifier; artifacts inferred (/app/palindromes.txt "
                         "named by the tests); 1 test-time download(s) to build time (pip)")
    multi = preview_harden(load_task(PUBLIC / "multi-output")).text
    assert "artifacts inferred (/app/out/report.json, /etc/app.conf, /root/result.txt named by the tests)" in multi
    assert "download" not in preview_harden(load_task(PUBLIC / "tb2-wheels")).text  # offline wheels stay as they are
    port = preview_harden(load_task(PUBLIC / "served-port"))
    assert port.kind == "cannot" and "port 8000 on localhost (tests/test.sh:6)" in port.text
    seed = load_task(SEEDS / "csv-etl")
    assert preview_harden(seed).text == "nothing for harden to fix: the tests already run in a separate verifier"
    lenient = preview_harden(seed, broken_by=["answer_flooding"])
    assert lenient.kind == "cannot" and "answer_flooding broke it: a lenient grader; tighten the tests" in lenient.text
    assert "nothing to learn from" in preview_harden(load_task(PUBLIC / "tb2-pypi"), oracle_fails=True).text


@pytest.fixture
def fake_audit(monkeypatch):
    """No container: the red team breaks every task by reward forgery; harden_task records what it was given."""
    hardened: list[dict] = []

    async def verify_tasks(tasks, trials_dir, **kw):
        red = VerifierReport(name="red_team", passed=False, reasons=["reward_forgery broke it"],
                             metrics={"broke": ["reward_forgery"]})
        return [Verdict(task=name, task_dir=d, ok=False, reports={
            "oracle": VerifierReport(name="oracle", passed=True),
            "invalid_test": VerifierReport(name="invalid_test", passed=True), "red_team": red}) for name, d in tasks]

    async def harden_task(task, out_dir, **kw):
        hardened.append({"task": task.name, "before": kw["before"], "dest": kw["dest_name"]})
        dest = out_dir / kw["dest_name"]
        dest.mkdir(parents=True)
        return HardenResult(task=task.name, source=str(task.source), status="hardened", out=str(dest))

    monkeypatch.setattr("envevo.verify.verify_tasks", verify_tasks)
    monkeypatch.setattr("envevo.sandbox.runnable_copy", lambda task, env, mapping, dest: (task.source, []))
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    monkeypatch.setattr("envevo.harden.harden_task", harden_task)
    return hardened


def test_audit_says_what_harden_would_fix_and_hardens_into_a_folder(tmp_path, fake_audit) -> None:
    tasks = tmp_path / "tasks"
    for name in ("tb2-pypi", "served-port"):
        shutil.copytree(PUBLIC / name, tasks / name)
    args = ["audit", str(tasks), "--mutation", "off", "--repeats", "1", "--json"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "a1")])
    assert res.exit_code == ExitCode.FAIL, res.output
    rows = {r["task"].rsplit("/", 1)[-1]: r for r in json.loads(res.stdout)["tasks"]}
    assert rows["tb2-pypi"]["harden"].startswith("harden would fix: tests to a separate verifier")
    assert rows["served-port"]["harden"].startswith("harden cannot fix: the tests query port 8000")
    assert "hardened" not in rows["tb2-pypi"] and fake_audit == []

    res = runner.invoke(app, [*args, "--out", str(tmp_path / "a2"), "--harden", str(tmp_path / "hardened")])
    assert res.exit_code == ExitCode.FAIL, res.output
    rows = {r["task"].rsplit("/", 1)[-1]: r for r in json.loads(res.stdout)["tasks"]}
    # Only the task harden would fix, with the audit's own verdict as its before side (not verified again).
    assert [h["dest"] for h in fake_audit] == ["tb2-pypi"]
    assert isinstance(fake_audit[0]["before"], Verdict) and not fake_audit[0]["before"].ok
    assert rows["tb2-pypi"]["hardened"]["status"] == "hardened" and "hardened" not in rows["served-port"]
    marker = json.loads((tmp_path / "hardened" / MARKER).read_text())
    assert marker["written"] == ["tb2-pypi"]

    table = runner.invoke(app, [*args[:-1], "--out", str(tmp_path / "a3")])
    assert "harden would" in table.stdout and "harden cannot" in table.stdout, table.output


def test_audit_harden_needs_the_red_team_and_a_new_folder(tmp_path, fake_audit) -> None:
    args = ["audit", str(PUBLIC / "tb2-pypi"), "--mutation", "off", "--out", str(tmp_path / "a")]
    res = runner.invoke(app, [*args, "--red-team", "off", "--harden", str(tmp_path / "h")])
    assert res.exit_code == ExitCode.USAGE and "--harden proves each copy with the red team" in res.output
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "mine.txt").write_text("not harden's")
    res = runner.invoke(app, [*args, "--harden", str(tmp_path / "h")])
    assert res.exit_code == ExitCode.USAGE and "already exists" in res.output and fake_audit == []
    assert (tmp_path / "h" / "mine.txt").read_text() == "not harden's"


def test_seeds_select_carries_the_harden_preview(tmp_path) -> None:
    from tests.rollout.test_rollout_unit import _seed_store

    paths, _, store = _seed_store(tmp_path)
    store.close()
    base = ["seeds", "select", *map(str, paths), "--run", str(tmp_path / "run"), "--min-turns", "30"]
    res = runner.invoke(app, [*base, "--no-verify", "--out", str(tmp_path / "seeds"), "--json"])
    assert res.exit_code == 0, res.output
    previews = [t["harden"] for t in json.loads(res.stdout)["tasks"]]
    assert len(previews) == 2 and all(p.startswith(("harden would fix", "nothing for harden")) for p in previews)
    res = runner.invoke(app, [*base, "--no-verify", "--out", str(tmp_path / "s2"), "--harden", str(tmp_path / "h")])
    assert res.exit_code == ExitCode.USAGE and "needs --verify and the red team on" in res.output
