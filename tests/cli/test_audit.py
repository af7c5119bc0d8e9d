"""`envevo audit`: per-task verdicts, which exploit broke each task, a summary, and a resumable result file."""

import json

import pytest

from envevo.cli.audit_cmd import RESULTS, load_results, summarize
from tests.conftest import FIXTURES, run_cli

HACKABLE = FIXTURES / "hackable"


def test_results_survive_a_torn_last_line(tmp_path):
    f = tmp_path / RESULTS
    f.write_text(json.dumps({"hash": "a", "status": "ok", "broken_by": [], "hackable": False}) + "\n" + '{"hash": "b", "sta')
    assert list(load_results(f)) == ["a"]
    assert load_results(tmp_path / "missing.jsonl") == {}


def test_summary_counts_classes_and_the_hackable_fraction():
    recs = [{"status": "ok", "broken_by": [], "hackable": False},
            {"status": "fail", "broken_by": ["exploit:reward_forgery", "exploit:runner_hijack"], "hackable": True},
            {"status": "fail", "broken_by": ["oracle"], "hackable": False},
            {"status": "fail", "broken_by": ["exploit:reward_forgery"], "hackable": True}]
    s = summarize(recs)
    assert s["tasks"] == 4 and s["hackable"] == 2 and s["hackable_fraction"] == 0.5
    assert s["failure_classes"] == {"exploit:reward_forgery": 2, "exploit:runner_hijack": 1, "oracle": 1}
    assert s["status"] == {"ok": 1, "fail": 3}


def test_an_earlier_audit_needs_resume(tmp_path):
    (tmp_path / RESULTS).write_text("")
    proc = run_cli("audit", str(HACKABLE / "resistant"), "--out", str(tmp_path))
    assert proc.returncode == 2 and "--resume" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_red_team_setting_is_one_line(tmp_path):
    proc = run_cli("audit", str(HACKABLE / "resistant"), "--out", str(tmp_path), "--red-team", "sample:0")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.sandbox
def test_audit_names_the_exploit_and_resumes(sandbox, tmp_path):
    tasks = [str(HACKABLE / "resistant"), str(HACKABLE / "tool_shadowing")]
    proc = run_cli("audit", *tasks, "--out", str(tmp_path), "--json", "--trial-concurrency", "4")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    by = {t["task"]: t for t in data["tasks"]}
    assert by["resistant"]["status"] == "ok" and by["resistant"]["broken_by"] == []
    assert "exploit:tool_shadowing" in by["tool_shadowing"]["broken_by"] and by["tool_shadowing"]["hackable"]
    assert data["summary"]["hackable"] == 1 and data["summary"]["hackable_fraction"] == 0.5
    # A crash mid-write: the last record torn. --resume re-audits only that task.
    lines = (tmp_path / RESULTS).read_text().splitlines()
    assert len(lines) == 2
    kept = json.loads(lines[0])
    (tmp_path / RESULTS).write_text(lines[0] + "\n" + lines[1][:40])
    again = run_cli("audit", *tasks, "--out", str(tmp_path), "--json", "--resume")
    assert "resuming: 1 of 2" in again.stderr, again.stderr
    assert json.loads(again.stdout)["summary"] == data["summary"]
    # A finished audit re-run skips everything and starts no trial.
    trials = sorted(p.name for p in (tmp_path / "trials").rglob("result.json"))
    third = run_cli("audit", *tasks, "--out", str(tmp_path), "--resume")
    assert "resuming: 2 of 2" in third.stderr and sorted(p.name for p in (tmp_path / "trials").rglob("result.json")) == trials
    assert kept["hash"] in load_results(tmp_path / RESULTS)
