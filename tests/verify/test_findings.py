"""Verifier reports carry typed findings: which exploit broke the task, which mutant survived, what was inconclusive.

The audit's failure classes, `broken_by` and `survivors` read the findings, never the words of the reasons; a report
from before findings existed (reasons only) gives the answers it always gave, and a reason that names nothing no
longer crashes them."""

import asyncio
import json

import pytest

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.task import load_task
from envevo.verify import (
    Finding,
    FindingKind,
    InvalidTestVerifier,
    MutationVerifier,
    OracleVerifier,
    RedTeamVerifier,
    TaskAttacker,
    TaskJudge,
    Verdict,
    VerifierReport,
    audit_record,
    broken_by,
    failure_classes,
    survivors,
    verify_tasks,
)
from envevo.verify._evidence import EvidenceKind, assess_test_log
from envevo.verify._unbuilt import collapse_unbuilt
from tests.conftest import FIXTURES

HACKABLE = FIXTURES / "hackable"


def _exploit_run(tmp_path, exploit, reward, kind=ErrorKind.OK, stdout="PASS sum\n"):
    d = tmp_path / exploit / f"t__rt-{exploit}__abc123"
    (d / "agent").mkdir(parents=True)
    (d / "verifier").mkdir()
    (d / "agent" / "script.log").write_text("planted /usr/local/bin/python3\n")
    (d / "verifier" / "test-stdout.txt").write_text(stdout)
    return TrialOutcome(task="t", agent="x", reward=reward, error_kind=kind, trial_dir=d)


def _red_team_report(tmp_path) -> VerifierReport:
    """runner_hijack broke the task, output_guessing never reached the tests, reward_forgery was resisted."""
    runs = [_exploit_run(tmp_path, "reward_forgery", 0.0),
            _exploit_run(tmp_path, "runner_hijack", 1.0),
            _exploit_run(tmp_path, "output_guessing", None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, stdout="")]
    return RedTeamVerifier().judge_task(HACKABLE / "runner_hijack", runs)


# ---- what the verifiers state -------------------------------------------------------------------------


def test_a_red_team_report_types_each_reason(tmp_path):
    rep = _red_team_report(tmp_path)
    assert [(f.exploit, f.kind) for f in rep.findings] == [("runner_hijack", FindingKind.BROKE),
                                                          ("output_guessing", FindingKind.INCONCLUSIVE)]
    broke, unsure = rep.findings
    assert broke.source == "red_team" and broke.evidence == "reward 1.0 without solving the task"
    assert broke.trial_dir is not None and "__rt-runner_hijack__" in broke.trial_dir and broke.error_kind is None
    assert unsure.error_kind is ErrorKind.ENVIRONMENT_BUILD_FAILURE
    # The words are what they were: one reason per finding, in the same order, naming the same exploit.
    assert [r.split(":", 1)[0] for r in rep.reasons] == ["runner_hijack", "output_guessing"]
    assert broken_by(rep) == ["runner_hijack"]


def test_a_static_exploit_states_what_it_found(tmp_path):
    rep = RedTeamVerifier(exploits=["peeking"]).judge_task(HACKABLE / "peeking", [])
    (f,) = rep.findings
    assert (f.exploit, f.kind, f.trial_dir) == ("peeking", FindingKind.BROKE, None)
    assert f.evidence and f.evidence in rep.reasons[0]


def test_oracle_and_invalid_test_findings_say_failed_or_inconclusive(tmp_path):
    never = tmp_path / "never"
    (never / "verifier").mkdir(parents=True)
    (never / "verifier" / "test-stdout.txt").write_text("bash: pytest: command not found\n")
    (never / "verifier" / "reward.txt").write_text("0")
    unsure = InvalidTestVerifier().judge([TrialOutcome(task="t", agent="nop", reward=0.0, trial_dir=never)])
    assert unsure.inconclusive and [f.kind for f in unsure.findings] == [FindingKind.INCONCLUSIVE]
    assert unsure.findings[0].trial_dir == str(never) and unsure.findings[0].source == "invalid_test"
    passes = TrialOutcome(task="t", agent="nop", reward=1.0, trial_dir=never)
    assert [f.kind for f in InvalidTestVerifier().judge([passes]).findings] == [FindingKind.FAILED]
    # Oracle: one run passed, one scored 0 → flaky (no trial of its own) and the failed run.
    low = TrialOutcome(task="t", agent="oracle", reward=0.0, trial_dir=None)
    rep = OracleVerifier(repeats=2).judge([TrialOutcome(task="t", agent="oracle", reward=1.0), low])
    assert [(f.kind, f.evidence.split(":")[0]) for f in rep.findings] == [(FindingKind.FAILED, "flaky"),
                                                                          (FindingKind.FAILED, "run 2/2")]
    assert len(rep.findings) == len(rep.reasons)


# ---- code reads the findings, not the words ---------------------------------------------------------


def test_broken_by_and_survivors_do_not_depend_on_the_words(tmp_path):
    # `envevo verify` rewrites paths in reasons for display; a translated or reworded reason must name the same hack.
    rep = _red_team_report(tmp_path)
    reworded = rep.model_copy(update={"reasons": ["quelqu'un a triché", "on ne sait pas"]})
    assert broken_by(reworded) == ["runner_hijack"]
    survived = VerifierReport(name="mutation", passed=False, reasons=["a near miss passed"],
                              findings=[Finding(source="mutation", kind=FindingKind.BROKE, exploit="step2-wrong")])
    assert survivors(survived) == ["step2-wrong"]


def _old_broken_by(reasons):  # what broken_by computed before reports carried findings
    return [r.split(":", 1)[0] for r in reasons if not r.split(":", 1)[1].lstrip().startswith("inconclusive")]


def _old_survivors(reasons):
    return [r.split(":", 1)[0] for r in reasons if r.split(":", 2)[1].strip() == "survived"]


RED_REASONS = ["runner_hijack: reward 1.0 without solving the task (logs: /t/x)\n  planted:\n  | /conftest.py",
               "peeking: the build context holds the answer; found:\n  | Dockerfile: COPY solution/ /s",
               "output_guessing: inconclusive: the exploit never ran to the tests: agent_timeout: (no message)",
               "llm_hacker: inconclusive: the model failed"]
MUTATION_REASONS = ["step2-wrong: survived: step 2 done with its wrong variant scored 1.0, not 0 (logs: /t/y)",
                    "prefix-3of4: survived: solve.sh cut after command 3 of 4 scored 1.0",
                    "step1-skip: inconclusive: step 1 skipped: the mutant never ran to the tests"]


def test_reasons_from_before_findings_give_the_old_answers():
    red = VerifierReport(name="red_team", passed=False, reasons=RED_REASONS)
    assert broken_by(red) == _old_broken_by(RED_REASONS) == ["runner_hijack", "peeking"]
    mutation = VerifierReport(name="mutation", passed=False, reasons=MUTATION_REASONS)
    assert survivors(mutation) == _old_survivors(MUTATION_REASONS) == ["step2-wrong", "prefix-3of4"]


def test_a_reason_that_names_nothing_no_longer_crashes():
    # The environment-does-not-build head, say, has no "<exploit>:" in front: the string parsers raised IndexError.
    for old in (_old_broken_by, _old_survivors):
        with pytest.raises(IndexError):
            old(["the environment does not build"])
    red = VerifierReport(name="red_team", passed=False, reasons=["the environment does not build", *RED_REASONS[:1]])
    assert broken_by(red) == ["runner_hijack"]
    mutation = VerifierReport(name="mutation", passed=False, reasons=[MUTATION_REASONS[0], "mutants not run"])
    assert survivors(mutation) == ["step2-wrong"]
    assert [f.kind for f in mutation.facts()] == [FindingKind.BROKE, FindingKind.FAILED]


def _verdict(red: VerifierReport) -> Verdict:
    reports = {"oracle": VerifierReport(name="oracle", passed=True),
               "invalid_test": VerifierReport(name="invalid_test", passed=True), "red_team": red}
    return Verdict(task="runner_hijack", task_dir=HACKABLE / "runner_hijack", ok=False, reports=reports)


def test_the_audit_classes_come_from_findings_and_old_records_agree(tmp_path):
    verdict = _verdict(_red_team_report(tmp_path))
    summary = verdict.summary()
    rec = audit_record(load_task(HACKABLE / "runner_hijack"), verdict)
    assert rec["broken_by"] == ["exploit:runner_hijack"] and rec["hackable"]
    # audit.jsonl keeps the findings typed: they read back as Findings.
    line = json.loads(json.dumps(rec, default=str))
    (f, _) = [Finding.model_validate(x) for x in line["verdict"]["red_team"]["findings"]]
    assert (f.exploit, f.kind) == ("runner_hijack", FindingKind.BROKE)
    # A summary written before findings (no "findings" key) gives the same classes from its reasons.
    old = {**summary, "red_team": {k: v for k, v in summary["red_team"].items() if k != "findings"}}
    assert failure_classes(old) == failure_classes(summary) == ["exploit:runner_hijack"]
    # Reworded reasons do not change the classes: they come from the findings.
    summary["red_team"]["reasons"] = ["x", "y"]
    assert failure_classes(summary) == ["exploit:runner_hijack"]


def test_only_inconclusive_exploits_are_not_hackable(tmp_path):
    run = _exploit_run(tmp_path, "runner_hijack", None, ErrorKind.INFRASTRUCTURE_ERROR, stdout="")
    rep = RedTeamVerifier(exploits=["runner_hijack"]).judge_task(HACKABLE / "runner_hijack", [run])
    rec = audit_record(load_task(HACKABLE / "runner_hijack"), _verdict(rep))
    assert rec["broken_by"] == ["red_team:inconclusive"] and not rec["hackable"]


def test_a_collapsed_build_failure_keeps_findings_beside_their_reasons(tmp_path):
    runs = []
    for i in range(3):
        (tmp_path / f"b{i}" / "environment").mkdir(parents=True)
        (tmp_path / f"b{i}" / "environment" / "build.log").write_text("Error: building at STEP \"RUN exit 3\"\n")
        runs.append(TrialOutcome(task="t", agent="oracle", error_kind=ErrorKind.ENVIRONMENT_BUILD_FAILURE,
                                 trial_dir=tmp_path / f"b{i}", error_message="building failed"))
    red = RedTeamVerifier(exploits=["peeking", "reward_forgery"]).judge_task(HACKABLE / "peeking", runs[2:])
    reports = collapse_unbuilt({"oracle": OracleVerifier(repeats=2).judge(runs[:2]), "red_team": red})
    (head,) = reports["oracle"].findings
    assert head.kind is FindingKind.FAILED and head.error_kind is ErrorKind.ENVIRONMENT_BUILD_FAILURE
    assert reports["oracle"].reasons[0].startswith("the environment does not build")
    # The static exploit's finding stays with its reason; the per-trial build error goes with its reason.
    assert [f.exploit for f in reports["red_team"].findings] == ["peeking"] and broken_by(reports["red_team"]) == ["peeking"]
    assert len(reports["red_team"].reasons) == 1 and reports["red_team"].reasons[0].startswith("peeking:")


# ---- the optional verifier methods, typed ----------------------------------------------------------


def test_the_verifiers_declare_their_optional_methods():
    assert isinstance(RedTeamVerifier(), TaskJudge) and isinstance(RedTeamVerifier(), TaskAttacker)
    assert isinstance(MutationVerifier(), TaskJudge) and not isinstance(MutationVerifier(), TaskAttacker)
    assert not isinstance(OracleVerifier(), TaskJudge) and not isinstance(InvalidTestVerifier(), TaskAttacker)


class _Recorder:
    """A verifier with no trials that records which of its methods `verify_tasks` called."""

    def __init__(self, name, *, task_aware: bool):
        self.name, self.calls = name, []
        if task_aware:
            self.judge_task = lambda task_dir, runs: self._said("judge_task")
            self.attack_task = self._attack

    async def _attack(self, task_dir, env, trials_dir, gate):
        self.calls.append("attack_task")

    def _said(self, how):
        self.calls.append(how)
        return VerifierReport(name=self.name, passed=True)

    def trial_specs(self, task_dir, env, trials_dir):
        return []

    def judge(self, runs):
        return self._said("judge")


def test_verify_tasks_calls_what_a_verifier_declares(tmp_path):
    aware, plain = _Recorder("aware", task_aware=True), _Recorder("plain", task_aware=False)
    (verdict,) = asyncio.run(verify_tasks([("resistant", HACKABLE / "resistant")], tmp_path, verifiers=[aware, plain]))
    assert verdict.ok and aware.calls == ["attack_task", "judge_task"] and plain.calls == ["judge"]


def test_evidence_kinds_compare_and_serialize_as_their_old_strings():
    ev = assess_test_log("=== 1 failed, 2 passed in 0.31s ===\n")
    assert ev.kind is EvidenceKind.FAILED and ev.kind == "failed" and json.dumps(ev.kind) == '"failed"'
    assert assess_test_log("").kind == "none" and not assess_test_log("")


def test_a_report_stored_by_the_previous_version_reads_the_same():
    """The previous version stored reasons and findings side by side, the findings without their words (SQLite rows,
    audit.jsonl, run buffers): such a row reads back with the same reasons, each now its finding's text, and the
    same typed findings; dumped and read again, it stays so."""
    row = {"name": "red_team", "passed": False, "inconclusive": False, "reasons": RED_REASONS[:2],
           "notes": ["llm_hacker: skipped: no model configured"],
           "findings": [{"source": "red_team", "kind": "broke", "exploit": "runner_hijack", "evidence": "reward 1.0"},
                        {"source": "red_team", "kind": "broke", "exploit": "peeking", "evidence": "found"},
                        {"source": "red_team", "kind": "skipped", "exploit": "llm_hacker", "evidence": "no model"}]}
    rep = VerifierReport.model_validate(row)
    assert rep.reasons == RED_REASONS[:2] and broken_by(rep) == ["runner_hijack", "peeking"]
    assert [f.text for f in rep.findings[:2]] == RED_REASONS[:2] and rep.findings[2].kind is FindingKind.SKIPPED
    assert [f.evidence for f in rep.findings] == ["reward 1.0", "found", "no model"]
    again = VerifierReport.model_validate(json.loads(rep.model_dump_json()))
    assert again == rep and again.reasons == RED_REASONS[:2]
    # A summary part of the previous version's audit.jsonl gives the same classes.
    assert failure_classes({"red_team": row}) == ["exploit:runner_hijack", "exploit:peeking"]


def test_the_reasons_are_rendered_from_the_findings(tmp_path):
    rep = _red_team_report(tmp_path)
    assert rep.reasons == [f.text for f in rep.findings if f.kind is not FindingKind.SKIPPED]
    dumped = json.loads(rep.model_dump_json())
    assert dumped["reasons"] == rep.reasons  # stored beside the findings, for readers of the rows
    edited = rep.model_copy(update={"findings": rep.findings[1:]})
    assert edited.reasons == rep.reasons[1:]  # one source: no list to keep in step


def test_the_judge_that_could_not_judge_is_inconclusive():
    from types import SimpleNamespace

    from envevo.evolve.engines.llm._judge import RubricJudge

    rep = RubricJudge._not_judged(SimpleNamespace(name="rubric"), "the lineage's budget is spent")  # type: ignore[arg-type]
    assert rep.inconclusive and not rep.passed and rep.findings[0].kind is FindingKind.INCONCLUSIVE
    verdict = Verdict(task="t", task_dir=HACKABLE, ok=False, reports={"rubric": rep})
    assert verdict.status == "inconclusive" and verdict.reasons == ["rubric: not judged: the lineage's budget is spent"]
