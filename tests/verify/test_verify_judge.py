"""How the verifiers judge trial outcomes: the rules a user relies on to trust a verdict."""

from pathlib import Path

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.verify import InvalidTestVerifier, OracleVerifier


def outcome(reward=None, kind=ErrorKind.OK, msg=None, agent="oracle"):
    return TrialOutcome(task="t", agent=agent, reward=reward, error_kind=kind, error_message=msg, trial_dir=Path("/tmp/x"))


def test_oracle_passes_only_when_every_repeat_scores_one():
    v = OracleVerifier(repeats=3)
    assert v.judge([outcome(1.0)] * 3).passed
    report = v.judge([outcome(1.0), outcome(0.0), outcome(1.0)])
    assert not report.passed
    assert report.reasons[0].startswith("flaky: passed 2 of 3")
    assert any("scored 0.0" in r for r in report.reasons)


def test_oracle_reports_error_kind_and_log_path():
    report = OracleVerifier(repeats=1).judge([outcome(None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, "boom")])
    assert not report.passed
    assert "environment_build_failure: boom" in report.reasons[0]
    assert "/tmp/x" in report.reasons[0]


def test_oracle_partial_reward_is_not_a_pass():
    assert not OracleVerifier(repeats=1).judge([outcome(0.5)]).passed


def test_oracle_needs_at_least_one_repeat():
    import pytest

    with pytest.raises(ValueError):
        OracleVerifier(repeats=0)


def test_invalid_test_does_not_pass_on_a_zero_it_cannot_back_with_logs():
    # /tmp/x holds no test log and no reward file: nothing shows the tests ran (tests/verify/test_verify_evidence.py
    # covers the evidence that does pass).
    report = InvalidTestVerifier().judge([outcome(0.0, agent="nop")])
    assert not report.passed and report.inconclusive


def test_invalid_test_fails_when_tests_pass_untouched():
    report = InvalidTestVerifier().judge([outcome(1.0, agent="nop")])
    assert not report.passed and "pass on an untouched environment" in report.reasons[0]


def test_invalid_test_fails_when_no_reward_written():
    report = InvalidTestVerifier().judge([outcome(None, ErrorKind.REWARD_MISSING, "RewardFileNotFoundError", agent="nop")])
    assert not report.passed and "wrote no reward" in report.reasons[0]


def test_invalid_test_fails_when_environment_breaks():
    report = InvalidTestVerifier().judge([outcome(None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, "x", agent="nop")])
    assert not report.passed and "environment_build_failure" in report.reasons[0]


def test_verifiers_ask_for_the_right_trials():
    specs = OracleVerifier(repeats=2).trial_specs(Path("/t"), "podman", Path("/j"))
    assert [s.agent for s in specs] == ["oracle", "oracle"]
    assert [s.agent for s in InvalidTestVerifier().trial_specs(Path("/t"), "docker", Path("/j"))] == ["nop"]
    assert specs[0].env == "podman"
