"""Evidence from trial dirs: invalid-test passes only when the logs show the tests ran and failed, and every
failure reason names its trial dir and quotes the log lines that explain it. Synthetic trial dirs, no containers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.verify import InvalidTestVerifier, OracleVerifier, Verdict
from envevo.verify._evidence import (
    assess_test_log,
    build_error,
    failure_evidence,
    pull_failure,
    read_trial_logs,
    run_evidence,
    runner_missing,
    tail,
)

PYTEST_FAILED = """\
============================= test session starts ==============================
collected 3 items

../tests/test_outputs.py .F.                                             [100%]

=================================== FAILURES ===================================
________________________________ test_count ____________________________________
    def test_count():
>       assert Path("/app/count.txt").read_text().strip() == "3"
E       FileNotFoundError: [Errno 2] No such file or directory: '/app/count.txt'
=========================== short test summary info ============================
FAILED ../tests/test_outputs.py::test_count - FileNotFoundError: [Errno 2] No such file or directory
========================= 1 failed, 2 passed in 0.31s ==========================
"""


def trial(tmp_path: Path, stdout: str | None = None, reward: str | None = "0", name: str = "t__abc", **files: str) -> Path:
    d = tmp_path / name
    (d / "verifier").mkdir(parents=True)
    if stdout is not None:
        (d / "verifier" / "test-stdout.txt").write_text(stdout)
    if reward is not None:
        (d / "verifier" / "reward.txt").write_text(reward + "\n")
    for key, text in files.items():  # environment__build_log -> environment/build.log
        stem, _, ext = key.replace("__", "/").rpartition("_")
        p = d / f"{stem}.{ext}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return d


def outcome(d: Path | None, reward: float | None = 0.0, kind: ErrorKind = ErrorKind.OK, msg: str | None = None,
            agent: str = "nop") -> TrialOutcome:
    return TrialOutcome(task="t", agent=agent, reward=reward, error_kind=kind, error_message=msg, trial_dir=d)


def judge_nop(d: Path, reward: float | None = 0.0, **kw):
    return InvalidTestVerifier().judge([outcome(d, reward, **kw)])


# ---- invalid-test: pass only on evidence -------------------------------------------------------------


def test_pytest_failed_summary_passes_invalid_test(tmp_path):
    rep = judge_nop(trial(tmp_path, PYTEST_FAILED))
    assert rep.passed and not rep.inconclusive and rep.reasons == []


def test_pytest_quiet_summary_and_failed_line_are_evidence():
    assert failure_evidence("F.\n1 failed, 1 passed in 0.02s\n") == "1 failed, 1 passed in 0.02s"
    assert failure_evidence("FAILED tests/test_outputs.py::test_x - assert 1 == 2\n").startswith("FAILED tests/")


@pytest.mark.parametrize("line", [
    "FAIL lines /app/out/step1.txt - FileNotFoundError [Errno 2] No such file or directory: '/app/out/step1.txt'",
    "FAIL customers.jsonl readable, one JSON object per line: FileNotFoundError(2, 'No such file or directory')",
    "not ok 2 - output file exists",
])
def test_per_check_fail_line_passes_invalid_test(tmp_path, line):
    rep = judge_nop(trial(tmp_path, f"PASS text /app/in.txt\n{line}\n1 of 2 checks passed\n"))
    assert rep.passed, rep.reasons


def test_procedural_and_seed_summaries_are_evidence():
    assert failure_evidence("0 of 3 checks passed\n") == "0 of 3 checks passed"
    assert failure_evidence("4 check(s) failed\n") == "4 check(s) failed"
    assert failure_evidence("3 of 3 checks passed\nall checks passed\n") is None
    assert run_evidence("3 of 3 checks passed\n") == "3 of 3 checks passed"


def test_ctrf_report_with_a_failed_test_passes_invalid_test(tmp_path):
    ctrf = {"results": {"tool": {"name": "pytest"}, "summary": {"tests": 2, "passed": 1, "failed": 1}}}
    rep = judge_nop(trial(tmp_path, "", reward=None, verifier__ctrf_json="x"))
    assert rep.inconclusive  # a non-JSON ctrf file is no evidence
    d = trial(tmp_path, "", reward=None, name="t2")
    (d / "verifier" / "ctrf.json").write_text(json.dumps(ctrf))
    assert judge_nop(d).passed


@pytest.mark.parametrize("stdout, cause", [
    ("/usr/bin/python3: No module named pytest\n", "pytest is not installed"),
    ("/tests/test.sh: line 3: uv: command not found\n", "command not found"),
    ("/tests/test.sh: line 3: uvx: command not found\n", "command not found"),
    ("bash: pytest: command not found\n", "command not found"),
    ("sh: 1: python3: not found\n", "command not found"),
    ("/usr/bin/env: 'python3': No such file or directory\n", "does not exist"),
    ("bash: /tests/run-tests.sh: No such file or directory\n", "does not exist"),
    ("ERROR: file or directory not found: /tests/test_outputs.py\n\nno tests ran in 0.01s\n", "no test file"),
    ("collected 0 items\n\n============================ no tests ran in 0.01s =============================\n", "ran no tests"),
    ("E   ModuleNotFoundError: No module named 'requests'\n!!! Interrupted: 1 error during collection !!!\n"
     "=============================== 1 error in 0.05s ===============================\n", "collection"),
    ("curl: (6) Could not resolve host: astral.sh\n", "no network"),
    ("Warning: Temporary failure in name resolution\nERROR: No matching distribution found for pytest\n", "no network"),
])
def test_runner_never_ran_is_inconclusive(tmp_path, stdout, cause):
    d = trial(tmp_path, stdout)
    rep = judge_nop(d)
    assert not rep.passed and rep.inconclusive, rep.reasons
    assert len(rep.reasons) == 1 and cause in rep.reasons[0]
    assert str(d) in rep.reasons[0]
    assert stdout.strip().splitlines()[-1].strip() in rep.reasons[0]  # the log tail is quoted


def test_no_module_named_pytest_and_uv_not_found_are_inconclusive(tmp_path):
    for i, text in enumerate(["/usr/bin/python3: No module named pytest", "uv: command not found"]):
        rep = judge_nop(trial(tmp_path, text + "\n", name=f"t{i}"))
        assert rep.inconclusive and not rep.passed
        assert "never ran" in rep.reasons[0] and text in rep.reasons[0]


def test_a_silent_check_that_wrote_reward_zero_passes(tmp_path):
    # `if [ "$(cat /app/x)" = 42 ]; then echo 1; else echo 0; fi > reward.txt` prints nothing: the reward file itself
    # is the evidence (Harbor deletes reward files before the verifier runs), as long as no runner error shows.
    assert judge_nop(trial(tmp_path, "")).passed
    assert judge_nop(trial(tmp_path, "wrong answer\n", name="t2")).passed


def test_reward_zero_without_a_reward_file_and_without_results_is_inconclusive(tmp_path):
    d = trial(tmp_path, "", reward=None)
    rep = judge_nop(d)
    assert not rep.passed and rep.inconclusive
    assert "no evidence" in rep.reasons[0] and "empty" in rep.reasons[0] and str(d) in rep.reasons[0]


def test_a_plain_python_assert_is_evidence_of_failure():
    assert failure_evidence("Traceback (most recent call last):\n  File \"/tests/t.py\", line 3\nAssertionError: want 42\n")


def test_missing_trial_dir_is_inconclusive_not_a_pass(tmp_path):
    rep = judge_nop(tmp_path / "never-written")
    assert rep.inconclusive and not rep.passed


def test_reward_zero_with_unrecognised_output_is_inconclusive(tmp_path):
    rep = judge_nop(trial(tmp_path, "installing…\ndone\n", reward=None))
    assert rep.inconclusive and "no test results" in rep.reasons[0]


def test_reward_zero_after_tests_ran_passes(tmp_path):
    # pytest demonstrably ran tests (collected 2 items) and the script then wrote 0: evidence enough.
    assert judge_nop(trial(tmp_path, "collected 2 items\n\n../tests/test_outputs.py ")).passed


def test_reward_above_zero_fails(tmp_path):
    d = trial(tmp_path, "============ 3 passed in 0.1s ============\n", reward="1")
    rep = judge_nop(d, reward=1.0)
    assert not rep.passed and not rep.inconclusive
    assert "pass on an untouched environment" in rep.reasons[0] and str(d) in rep.reasons[0]
    assert "3 passed" in rep.reasons[0]
    assert not judge_nop(trial(tmp_path, PYTEST_FAILED, reward="0.5", name="half"), reward=0.5).passed


def test_failure_evidence_beats_a_stray_not_found_line(tmp_path):
    # A test's own output may say "command not found"; the failing summary is what counts.
    text = "bash: jq: command not found\n" + PYTEST_FAILED
    assert assess_test_log(text).kind == "failed"


def test_failures_that_are_all_import_errors_are_not_evidence():
    text = ("FAILED tests/test_outputs.py::test_a - ModuleNotFoundError: No module named 'numpy'\n"
            "============ 1 failed in 0.1s ============\n")
    ev = assess_test_log(text)
    assert ev.kind == "not_ran" and "ModuleNotFoundError" in ev.detail


def test_reward_missing_fails_unless_the_runner_never_ran(tmp_path):
    d = trial(tmp_path, "answer wrong\n", reward=None)
    rep = judge_nop(d, None, kind=ErrorKind.REWARD_MISSING, msg="RewardFileNotFoundError: no reward")
    assert not rep.passed and not rep.inconclusive and "wrote no reward" in rep.reasons[0]
    assert "answer wrong" in rep.reasons[0] and str(d) in rep.reasons[0]
    d2 = trial(tmp_path, "bash: pytest: command not found\n", reward=None, name="t2")
    rep2 = judge_nop(d2, None, kind=ErrorKind.REWARD_MISSING, msg="RewardFileNotFoundError: no reward")
    assert rep2.inconclusive and not rep2.passed


def test_a_real_failure_is_not_hidden_by_an_inconclusive_run(tmp_path):
    v = InvalidTestVerifier()
    rep = v.judge([outcome(trial(tmp_path, "", name="a")), outcome(trial(tmp_path, "", reward="1", name="b"), 1.0)])
    assert not rep.passed and not rep.inconclusive


def test_reward_json_and_ansi_colours(tmp_path):
    d = trial(tmp_path, "\x1b[31m======= 1 failed in 0.1s =======\x1b[0m\n", reward=None,
              verifier__reward_json=json.dumps({"reward": 0.0}))
    logs = read_trial_logs(d)
    assert logs.reward == 0.0
    assert judge_nop(d).passed


# ---- oracle, build and pull failures: name the trial dir, quote the log ---------------------------------


def test_oracle_failure_reason_has_trial_dir_and_stdout_tail(tmp_path):
    d = trial(tmp_path, PYTEST_FAILED)
    rep = OracleVerifier(repeats=1).judge([outcome(d, 0.0, agent="oracle")])
    assert not rep.passed and not rep.inconclusive
    reason = rep.reasons[0]
    assert "scored 0.0, not 1.0" in reason and str(d) in reason
    assert "E       FileNotFoundError" in reason and "FAILED ../tests/test_outputs.py::test_count" in reason


def test_oracle_failure_without_pytest_quotes_the_last_lines(tmp_path):
    lines = "".join(f"line {i}\n" for i in range(30)) + "FAIL total /app/total.txt - expected 42, got 41\n"
    d = trial(tmp_path, lines)
    reason = OracleVerifier(repeats=1).judge([outcome(d, 0.0, agent="oracle")]).reasons[0]
    assert "FAIL total /app/total.txt - expected 42, got 41" in reason and "line 29" in reason
    assert "line 5\n" not in reason  # a tail, not the whole log


def test_build_failure_reason_has_the_build_log_line(tmp_path):
    log = ("STEP 1/3: FROM debian:bookworm-slim\nSTEP 2/3: RUN apt-get install -y no-such-pkg\n"
           "Reading package lists...\nE: Unable to locate package no-such-pkg\n"
           'Error: building at STEP "RUN apt-get install -y no-such-pkg": while running runtime: exit status 100\n')
    d = trial(tmp_path, None, reward=None, environment__build_log=log)
    o = outcome(d, None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, "SandboxBuildFailedError: image build failed", agent="oracle")
    reason = OracleVerifier(repeats=1).judge([o]).reasons[0]
    assert "environment_build_failure" in reason and str(d) in reason
    assert "E: Unable to locate package no-such-pkg" in reason and "environment/build.log" in reason


def test_build_log_of_a_service_below_environment_is_read(tmp_path):
    line = ("Error: creating build container: initializing source docker://ghcr.io/laude-institute/t-bench/"
            "ubuntu-24-04:20250624: pinging container registry ghcr.io: dial tcp: lookup ghcr.io: no such host")
    d = trial(tmp_path, None, reward=None, environment__env__build_log=f"STEP 1/5: FROM x\n{line}\n")
    assert read_trial_logs(d).build_log.strip().endswith("no such host")
    o = outcome(d, None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, "SandboxBuildFailedError: building failed", agent="oracle")
    reason = OracleVerifier(repeats=1).judge([o]).reasons[0]
    assert "doctor --fix" in reason and "--image-map ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624=" in reason
    assert line in reason


def test_build_failure_from_the_message_alone(tmp_path):
    msg = ("RuntimeError: Docker compose command failed … #6 ERROR: process \"/bin/sh -c make\" did not complete "
           "successfully: exit code: 2")
    o = outcome(tmp_path / "gone", None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, msg, agent="oracle")
    reason = OracleVerifier(repeats=1).judge([o]).reasons[0]
    assert "did not complete successfully" in reason and "from the error message" in reason


@pytest.mark.parametrize("line", [
    "Error: creating build container: initializing source docker://docker.io/library/python:3.12-slim: "
    "pinging container registry registry-1.docker.io: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup failed",
    "manifest unknown: manifest unknown",
    "pull access denied for ghcr.io/acme/private, repository does not exist or may require 'docker login'",
])
def test_pull_failure_reason_says_how_to_provide_the_image(tmp_path, line):
    d = trial(tmp_path, None, reward=None, exception_txt=f"Traceback …\n{line}\n",
              result_json=json.dumps({"config": {"task": {"path": "/work/tasks/foo"}}}))
    o = outcome(d, None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, "SandboxBuildFailedError: build failed", agent="oracle")
    reason = OracleVerifier(repeats=1).judge([o]).reasons[0]
    assert "envevo doctor --fix --tasks /work/tasks/foo" in reason and "--image-map" in reason
    assert str(d) in reason and line[:40] in reason


def test_pull_failure_names_the_image_in_the_map_hint(tmp_path):
    line = "Error: creating build container: initializing source docker://docker.io/library/python:3.12-slim: x"
    o = outcome(None, None, ErrorKind.INFRASTRUCTURE_ERROR, line, agent="nop")
    reason = InvalidTestVerifier().judge([o]).reasons[0]
    assert "doctor --fix --tasks <task dir of t>" in reason
    assert "--image-map docker.io/library/python:3.12-slim=" in reason


def test_pure_helpers():
    assert tail("a\n\nb\n" + "".join(f"{i}\n" for i in range(30)), 3) == "27\n28\n29"
    assert runner_missing("all good\n") is None
    assert pull_failure("", "nothing\n") is None
    assert build_error("fine\nall fine\n") is None
    assert run_evidence(PYTEST_FAILED) is not None


def test_verdict_status_reflects_inconclusive(tmp_path):
    oracle = OracleVerifier(repeats=1).judge([outcome(trial(tmp_path, "PASS x\n", reward="1", name="o"), 1.0, agent="oracle")])
    nop = judge_nop(trial(tmp_path, "uv: command not found\n"))
    v = Verdict(task="t", task_dir=tmp_path, ok=oracle.passed and nop.passed, reports={"oracle": oracle, "invalid_test": nop})
    assert v.status == "inconclusive"
    assert v.summary()["invalid_test"]["inconclusive"] is True


def test_oracle_whose_tests_never_ran_is_inconclusive_not_failed(tmp_path):
    d = trial(tmp_path, "/tests/test.sh: line 8: uvx: command not found\n")
    rep = OracleVerifier(repeats=1).judge([outcome(d, agent="oracle")])
    assert not rep.passed and rep.inconclusive
    assert "never ran" in rep.reasons[0] and "uvx: command not found" in rep.reasons[0] and str(d) in rep.reasons[0]
    # A real low score next to it is a failure, whatever the other run says.
    d2 = trial(tmp_path, "FAIL answer\n", name="t2")
    rep = OracleVerifier(repeats=2).judge([outcome(d, agent="oracle"), outcome(d2, agent="oracle")])
    assert not rep.passed and not rep.inconclusive


UNITTEST_FAILED = """\
test_totals (test_outputs.TestTotals.test_totals) ... FAIL

======================================================================
FAIL: test_totals (test_outputs.TestTotals.test_totals)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tests/test_outputs.py", line 19, in test_totals
AssertionError: 1234.5 != 1235.5 within 2 places (1.0 difference)

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)
"""


def test_a_unittest_failure_is_evidence_and_its_assertion_is_quoted(tmp_path):
    d = trial(tmp_path, UNITTEST_FAILED)
    assert judge_nop(d).passed
    rep = OracleVerifier(repeats=1).judge([outcome(d, agent="oracle")])
    assert "FAIL: test_totals" in rep.reasons[0] and "AssertionError: 1234.5 != 1235.5" in rep.reasons[0]
