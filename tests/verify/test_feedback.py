"""The failure digest: what a failed run shows the Modifier (and the user), read from the files the trial left."""

import json

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.verify import OracleVerifier, run_digest

CTRF = {"results": {"tool": {"name": "pytest"}, "summary": {"tests": 3, "passed": 1, "failed": 2},
                    "tests": [{"name": "test_total", "status": "passed"},
                              {"name": "test_summary", "status": "failed",
                               "message": "AssertionError: assert 41 == 42\n+  where 41 = total()"},
                              {"name": "test_keys", "status": "failed", "trace": "KeyError: 'exfil'"}]}}
STDOUT = "".join(f"collect line {i}\n" for i in range(40)) + "=========== 2 failed, 1 passed in 0.31s ===========\n"


def oracle_trial(tmp_path, *, solve: str | None, exit_code: int | None = None, ctrf: dict | None = CTRF):
    d = tmp_path / "task__oracle"
    (d / "verifier").mkdir(parents=True)
    (d / "verifier" / "test-stdout.txt").write_text(STDOUT)
    (d / "verifier" / "reward.txt").write_text("0\n")
    if ctrf is not None:
        (d / "verifier" / "ctrf.json").write_text(json.dumps(ctrf))
    if solve is not None:
        (d / "agent").mkdir()
        (d / "agent" / "oracle.txt").write_text(solve)
        if exit_code:
            (d / "agent" / "exit-code.txt").write_text(str(exit_code))
    return TrialOutcome(task="task", agent="oracle", reward=0.0, trial_dir=d, error_kind=ErrorKind.OK)


def test_an_oracle_failure_names_the_failing_tests_solve_output_and_the_log_tail(tmp_path):
    solve = "".join(f"step {i}\n" for i in range(30)) + "solve.sh: line 9: jq: command not found\n"
    reason = OracleVerifier(repeats=1).judge([oracle_trial(tmp_path, solve=solve, exit_code=127)]).reasons[0]
    # The failing tests, from the CTRF report, with the first line of each message.
    assert "failing tests (ctrf.json):" in reason
    assert "test_summary: AssertionError: assert 41 == 42" in reason and "test_keys: KeyError: 'exfil'" in reason
    assert "test_total" not in reason and "where 41" not in reason
    # solve.sh's exit code and its last lines (where its error is), not all of it.
    assert "solve.sh exited 127" in reason and "jq: command not found" in reason and "step 29" in reason
    assert "step 3\n" not in reason
    # The tail of test-stdout, and the trial dir for the user.
    assert "2 failed, 1 passed" in reason and "collect line 39" in reason and "collect line 5\n" not in reason
    assert str(tmp_path) in reason


def test_without_ctrf_the_failing_tests_come_from_the_pytest_output():
    stdout = ("tests/test_outputs.py::test_a FAILED\nE       assert 'b' == 'a'\n"
              "FAILED tests/test_outputs.py::test_a - AssertionError\n====== 1 failed in 0.1s ======\n")
    digest = run_digest(test_stdout=stdout, reward=0.0)
    assert "failing tests (test-stdout):" in digest and "E       assert 'b' == 'a'" in digest
    assert digest.startswith("reward 0.0")
    assert "solve.sh" not in digest  # no solution ran: nothing to say about one


def test_a_solution_that_exits_zero_and_scores_one_adds_no_solve_output():
    digest = run_digest(test_stdout="PASS all\n", reward=1.0, solve_output="done\n", solve_exit=0)
    assert "solve.sh exited 0" in digest and "solve.sh's output" not in digest


def test_no_reward_is_said_plainly():
    digest = run_digest(test_stdout="bash: uvx: command not found\n", reward=None, solve_output="", solve_exit=0)
    assert digest.startswith("no reward written") and "solve.sh printed nothing" in digest
    assert "uvx: command not found" in digest


def test_per_check_fail_lines_count_as_failing_tests():
    stdout = "PASS attacker_ip\nFAIL keys: missing exfil_datasets\nnot ok 3 - totals\n2 check(s) failed\n"
    digest = run_digest(test_stdout=stdout, reward=0.0)
    assert "failing tests (test-stdout):\n  | FAIL keys: missing exfil_datasets\n  | not ok 3 - totals" in digest
    assert "PASS attacker_ip" not in digest.split("last ")[0]
