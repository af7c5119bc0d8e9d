"""The container verifiers. Each says which trials it needs and judges their outcomes.

Splitting "which trials" from "judge" lets one pool run every verifier's trials for many tasks at
once under a single concurrency bound, which is what makes them parallel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from envevo.runtime import ErrorKind, TrialOutcome, TrialSpec
from envevo.verify._verdict import VerifierReport


class TrialVerifier(Protocol):
    name: str

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]: ...

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport: ...


def _where(o: TrialOutcome) -> str:
    return f" (logs: {o.trial_dir})" if o.trial_dir else ""


class OracleVerifier:
    """The reference solution reaches reward 1.0 on every one of `repeats` runs (repeats catch flaky tests)."""

    name = "oracle"

    def __init__(self, repeats: int = 2):
        if repeats < 1:
            raise ValueError("repeats must be at least 1")
        self.repeats = repeats

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        return [TrialSpec(task_dir=task_dir, agent="oracle", env=env, trials_dir=trials_dir) for _ in range(self.repeats)]

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        reasons = []
        for i, o in enumerate(runs, 1):
            if o.error_kind is not ErrorKind.OK:
                reasons.append(f"run {i}/{len(runs)}: {o.error_kind.value}: {o.error_message}{_where(o)}")
            elif not o.passed:
                reasons.append(f"run {i}/{len(runs)}: the reference solution scored {o.reward}, not 1.0{_where(o)}")
        passes = sum(o.passed for o in runs)
        if reasons and 0 < passes < len(runs):
            reasons.insert(0, f"flaky: passed {passes} of {len(runs)} runs")
        return VerifierReport(name=self.name, passed=not reasons, reasons=reasons, runs=runs)


class InvalidTestVerifier:
    """An empty solution (Harbor's nop agent) fails, and fails because of the tests.

    The tests must run and write a reward of 0; a broken environment, a missing reward file or a
    reward above 0 on an untouched environment all fail this verifier.
    """

    name = "invalid_test"

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        return [TrialSpec(task_dir=task_dir, agent="nop", env=env, trials_dir=trials_dir)]

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        reasons = []
        for o in runs:
            if o.error_kind is ErrorKind.REWARD_MISSING:
                reasons.append(f"the tests wrote no reward on an untouched environment: {o.error_message}{_where(o)}")
            elif o.error_kind is not ErrorKind.OK:
                reasons.append(f"the empty solution did not fail on the tests but on {o.error_kind.value}: {o.error_message}{_where(o)}")
            elif o.reward is None or o.reward > 0.0:
                reasons.append(f"the tests pass on an untouched environment (reward {o.reward}); they do not test the task{_where(o)}")
        return VerifierReport(name=self.name, passed=not reasons, reasons=reasons, runs=runs)
