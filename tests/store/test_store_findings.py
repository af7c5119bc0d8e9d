"""A verifier's typed findings go into the store and come back as they went in (inconclusive ones too); a store
written before findings existed opens, reads none, and its reasons still answer which exploit broke a task."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.store import SCHEMA_VERSION, LineageStore
from envevo.verify import FindingKind, InvalidTestVerifier, RedTeamVerifier, VerifierReport, broken_by
from tests.conftest import FIXTURES
from tests.store.test_store_support import tiny_task

HACKABLE = FIXTURES / "hackable"


@pytest.fixture
def store(tmp_path: Path):
    with LineageStore.open(tmp_path / "run") as s:
        yield s


def _candidate(store: LineageStore) -> int:
    lid = store.create_lineage("seed", tiny_task("seed"))
    return store.add_candidate(lid, 1, "length", 1, tiny_task("c", "candidate"))


def _exploit_run(tmp_path: Path, exploit: str, reward: float | None, kind: ErrorKind = ErrorKind.OK) -> TrialOutcome:
    d = tmp_path / exploit / f"t__rt-{exploit}__abc123"
    (d / "verifier").mkdir(parents=True)
    (d / "verifier" / "test-stdout.txt").write_text("PASS sum\n" if kind is ErrorKind.OK else "")
    return TrialOutcome(task="t", agent="x", reward=reward, error_kind=kind, trial_dir=d)


def _red_team(tmp_path: Path) -> VerifierReport:
    runs = [_exploit_run(tmp_path, "runner_hijack", 1.0),
            _exploit_run(tmp_path, "output_guessing", None, ErrorKind.AGENT_TIMEOUT)]
    return RedTeamVerifier(exploits=["runner_hijack", "output_guessing"]).judge_task(HACKABLE / "runner_hijack", runs)


def test_a_report_with_findings_round_trips(store: LineageStore, tmp_path: Path) -> None:
    cid = _candidate(store)
    red = _red_team(tmp_path)
    never = tmp_path / "never"
    (never / "verifier").mkdir(parents=True)
    (never / "verifier" / "test-stdout.txt").write_text("bash: pytest: command not found\n")
    unsure = InvalidTestVerifier().judge([TrialOutcome(task="t", agent="nop", reward=0.0, trial_dir=never)])
    assert unsure.inconclusive and red.findings and unsure.findings
    store.add_verifier_report(cid, red)
    store.add_verifier_report(cid, unsure)
    got = {v.verifier: v for v in store.verifications(cid)}
    assert got["red_team"].findings == red.findings and got["invalid_test"].findings == unsure.findings
    assert [f.kind for f in got["red_team"].findings] == [FindingKind.BROKE, FindingKind.INCONCLUSIVE]
    assert got["red_team"].findings[1].error_kind is ErrorKind.AGENT_TIMEOUT
    assert got["invalid_test"].inconclusive and got["invalid_test"].findings[0].kind is FindingKind.INCONCLUSIVE
    # The words are stored as before, beside the findings.
    assert got["red_team"].reasons == red.reasons and got["invalid_test"].reasons == unsure.reasons
    back = VerifierReport(name="red_team", passed=False, reasons=["reworded"] * 2, findings=got["red_team"].findings)
    assert broken_by(back) == ["runner_hijack"]
    # Plain JSON for tools that read store.sqlite directly.
    row = store._db.conn.execute("SELECT findings FROM verifications WHERE verifier = 'red_team'").fetchone()
    assert [(f["exploit"], f["kind"]) for f in json.loads(row["findings"])] == [("runner_hijack", "broke"),
                                                                                ("output_guessing", "inconclusive")]


def test_a_report_made_of_reasons_only_stores_them_as_findings(store: LineageStore) -> None:
    """Findings are a report's one source: a report given in words only (an older row's shape) holds them as plain
    failures, each with its words, and stores both."""
    cid = _candidate(store)
    store.add_verifier_report(cid, VerifierReport(name="rubric", passed=False, reasons=["instruction too vague"]))
    (v,) = store.verifications(cid)
    assert v.reasons == ["instruction too vague"]
    assert [(f.kind, f.text) for f in v.findings] == [(FindingKind.FAILED, "instruction too vague")]


def test_a_store_from_before_findings_opens_and_reads_none(tmp_path: Path) -> None:
    from envevo.store._schema import MIGRATIONS

    db = tmp_path / "store.sqlite"
    conn = sqlite3.connect(db)  # a store as envevo wrote it at schema 3: verifications have no findings column
    for version, statements in MIGRATIONS[:3]:
        for stmt in statements:
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_version VALUES (?, 'then')", (version,))
    conn.commit()
    assert "findings" not in {r[1] for r in conn.execute("PRAGMA table_info(verifications)")}
    conn.close()
    with LineageStore.open(tmp_path) as s:
        cid = _candidate(s)
        old = sqlite3.connect(db)
        reasons = json.dumps(["runner_hijack: reward 1.0 without solving the task (logs: /t/x)",
                              "output_guessing: inconclusive: the exploit never ran to the tests"])
        old.execute("INSERT INTO verifications (candidate_id, verifier, passed, inconclusive, reasons, runs, created_at) "
                    "VALUES (?, 'red_team', 0, 0, ?, '[]', 'then')", (cid, reasons))
        old.commit()
        old.close()
        (v,) = s.verifications(cid)
        assert s.schema_version == SCHEMA_VERSION == 5
        assert v.findings == [] and v.reasons == json.loads(reasons)
        # Its reasons still say which exploit broke the task.
        assert broken_by(VerifierReport(name=v.verifier, passed=v.passed, reasons=v.reasons, findings=v.findings)) == [
            "runner_hijack"]
