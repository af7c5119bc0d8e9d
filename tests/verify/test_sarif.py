"""`envevo audit --sarif` and `--fail-on`: the SARIF 2.1.0 log of an audit's findings, and which classes fail CI."""

from __future__ import annotations

import json

import pytest

from envevo.cli.audit_cmd import RESULTS, check_fail_on
from envevo.errors import UserError
from envevo.task import load_task
from envevo.verify import Finding, FindingKind, Verdict, VerifierReport, audit_record, audit_sarif, fail_on_hits
from tests.conftest import FIXTURES, run_cli

HACKABLE = FIXTURES / "hackable"


def _record(name: str, reports: dict[str, VerifierReport]):
    task = load_task(HACKABLE / name)
    ok = all(r.passed for r in reports.values())
    return audit_record(task, Verdict(task=name, task_dir=HACKABLE / name, ok=ok, reports=reports))


def _records() -> list[dict]:
    passed = VerifierReport(name="oracle", passed=True)
    flooded = VerifierReport(
        name="red_team", passed=False, reasons=["answer_flooding: reward 1.0 without solving the task"],
        findings=[Finding(source="red_team", kind=FindingKind.BROKE, exploit="answer_flooding",
                          evidence="reward 1.0 without solving the task", trial_dir="/t/x__rt-answer_flooding__1")])
    unsure = VerifierReport(
        name="red_team", passed=False, inconclusive=True, reasons=["fifo_logs: inconclusive: …"],
        findings=[Finding(source="red_team", kind=FindingKind.INCONCLUSIVE, exploit="fifo_logs", evidence="verifier timeout"),
                  Finding(source="red_team", kind=FindingKind.SKIPPED, exploit="llm_hacker", evidence="no model")],
        metrics={"false_fail": {"probes": 2, "rejected": 1, "rejected_by": ["false_fail_crlf"], "rate": 0.5}})
    oracle_failed = VerifierReport(name="oracle", passed=False, reasons=["oracle: reward 0.0"],
                                   findings=[Finding(source="oracle", kind=FindingKind.FAILED, evidence="reward 0.0")])
    return [_record("answer_flooding", {"oracle": passed, "red_team": flooded}),
            _record("resistant", {"oracle": passed, "red_team": unsure}),
            _record("peeking", {"oracle": oracle_failed})]


def test_sarif_has_the_required_structure_and_one_result_per_finding():
    doc = audit_sarif(_records())
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    json.dumps(doc)  # serializable as is
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "envevo" and driver["version"]
    results = run["results"]
    for r in results:
        assert {"ruleId", "level", "message", "locations"} <= set(r) and r["message"]["text"]
        assert r["level"] in ("error", "warning")
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri
    assert {rule["id"] for rule in driver["rules"]} == {r["ruleId"] for r in results}
    by_rule = {r["ruleId"]: r for r in results}
    # the skipped llm_hacker is no result; the false fail is a warning beside the inconclusive one
    assert sorted(by_rule) == ["oracle", "red_team/answer_flooding", "red_team/false_fail_crlf", "red_team/fifo_logs"]
    assert by_rule["red_team/answer_flooding"]["level"] == "error"
    assert by_rule["red_team/answer_flooding"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "hackable/answer_flooding/tests/test.sh")
    assert by_rule["red_team/fifo_logs"]["level"] == "warning"
    assert by_rule["red_team/false_fail_crlf"]["level"] == "warning"
    assert by_rule["oracle"]["level"] == "error"
    assert by_rule["oracle"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("peeking/solution/solve.sh")
    assert audit_sarif([])["runs"][0]["results"] == []


def test_fail_on_matches_only_the_named_classes():
    flooded, unsure, oracle = _records()
    assert flooded["broken_by"] == ["exploit:answer_flooding"]
    assert fail_on_hits(flooded, ["answer_flooding"]) == ["exploit:answer_flooding"]
    assert fail_on_hits(flooded, ["exploit:answer_flooding"]) == fail_on_hits(flooded, ["red_team"]) == ["exploit:answer_flooding"]
    assert fail_on_hits(flooded, ["reward_forgery", "oracle"]) == []
    assert fail_on_hits(unsure, ["red_team", "fifo_logs"]) == []  # inconclusive never matches
    assert fail_on_hits(oracle, ["oracle"]) == ["oracle"]
    assert check_fail_on(["reward_forgery,answer_flooding", "mutant:wrong"]) == ["reward_forgery", "answer_flooding", "mutant:wrong"]
    with pytest.raises(UserError, match="--fail-on 'rewardforgery'"):
        check_fail_on(["rewardforgery"])


def test_bad_fail_on_is_one_line(tmp_path):
    proc = run_cli("audit", str(HACKABLE / "resistant"), "--out", str(tmp_path), "--fail-on", "nope")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--fail-on 'nope'" in proc.stderr, proc.stderr


@pytest.mark.sandbox
def test_a_resumed_audit_writes_sarif_and_fails_only_on_the_named_class(sandbox, tmp_path):
    """No trial runs: every task already has its record, so --fail-on and --sarif read the stored verdicts."""
    records = _records()[:2]
    (tmp_path / RESULTS).write_text("".join(json.dumps(r, default=str) + "\n" for r in records))
    tasks = [str(HACKABLE / "answer_flooding"), str(HACKABLE / "resistant")]
    sarif = tmp_path / "out.sarif"
    proc = run_cli("audit", *tasks, "--out", str(tmp_path), "--resume", "--sarif", str(sarif), "--fail-on", "reward_forgery")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(sarif.read_text())
    assert "red_team/answer_flooding" in {r["ruleId"] for r in doc["runs"][0]["results"]}
    proc = run_cli("audit", *tasks, "--out", str(tmp_path), "--resume", "--fail-on", "answer_flooding")
    assert proc.returncode == 1 and "--fail-on: exploit:answer_flooding broke some task" in proc.stderr, proc.stderr
    assert run_cli("audit", *tasks, "--out", str(tmp_path), "--resume").returncode == 1  # default: any failure
