"""The container verifiers. Each says which trials it needs and judges their outcomes.

Splitting "which trials" from "judge" lets one pool run every verifier's trials for many tasks at
once under a single concurrency bound, which is what makes them parallel.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from envevo.runtime import NOP_AGENT, ORACLE_AGENT, ErrorKind, TrialOutcome, TrialSpec, cert_failure_line
from envevo.verify._evidence import (
    EvidenceKind,
    TrialLogs,
    assess_test_log,
    build_error,
    pull_failure,
    pull_hint,
    quote,
    read_trial_logs,
)
from envevo.verify._feedback import run_digest, solution_run
from envevo.verify._plugins import INVALID_TEST, ORACLE
from envevo.verify._verdict import Finding, FindingKind, VerifierReport, finding, trial_finding

if TYPE_CHECKING:
    from envevo.verify._config import VerificationConfig


class TrialVerifier(Protocol):
    name: str

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]: ...

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport: ...


# What a trial verifier may also do; `verify_tasks` asks each verifier with isinstance.
@runtime_checkable
class TaskJudge(Protocol):
    """Judges with the task's files at hand as well as its trials (the red team's static exploits, the mutation
    verifier's plan); `verify_tasks` calls this instead of `judge`."""

    def judge_task(self, task_dir: Path, runs: list[TrialOutcome]) -> VerifierReport: ...


@runtime_checkable
class TaskAttacker(Protocol):
    """Acts on a task in sandboxes of its own, beside the pool's trials, before it is judged (the red team's agent
    exploits); it holds `gate` while a sandbox runs."""

    async def attack_task(self, task_dir: Path, env: str, trials_dir: Path, gate: asyncio.Semaphore) -> None: ...


@runtime_checkable
class TaskPreparer(Protocol):
    """Asks for something of its own before any trial is planned (the model-written near misses)."""

    async def prepare(self, task_dir: Path) -> None: ...


@runtime_checkable
class ComparesReference(Protocol):
    """Compares its trials with the reference solution's (the mutation verifier's end states): the trials of the
    verifiers whose spec has `reference` run fingerprinted, and are handed to it before it judges."""

    def reference(self, task_dir: Path, runs: list[TrialOutcome]) -> None: ...


def _found(source: str, kind: FindingKind, o: TrialOutcome, reason: str) -> Finding:
    """A finding of the trial `o`, said by `reason` (its first line is the evidence)."""
    return trial_finding(source, kind, o, reason, text=reason)


def _report(name: str, runs: list[TrialOutcome], failed: list[Finding], unknown: list[Finding]) -> VerifierReport:
    """Failed beats inconclusive: a report is inconclusive only when nothing failed outright."""
    return VerifierReport(name=name, passed=not (failed or unknown), inconclusive=bool(unknown) and not failed,
                          runs=runs, findings=failed + unknown)


def _where(o: TrialOutcome) -> str:
    return f" (logs: {o.trial_dir})" if o.trial_dir else " (no trial dir: the trial never started)"


def _indent(text: str) -> str:
    return "\n".join("  | " + ln for ln in text.splitlines())


def _task_arg(o: TrialOutcome, logs: TrialLogs) -> str:
    return logs.task_path or f"<task dir of {o.task}>"


def explain_error(o: TrialOutcome, logs: TrialLogs | None = None) -> str:
    """A trial that did not end in a clean reward: its kind, message, trial dir and the log lines that explain it.

    - an image that cannot be pulled: the pull error and how to provide the image (doctor --fix, --image-map);
    - a build failure: the build's error line with the lines before it, from environment/build.log,
      exception.txt or the message itself;
    - a verifier error or a missing reward: the tail of test-stdout.
    """
    logs = logs if logs is not None else read_trial_logs(o.trial_dir)
    message = (o.error_message or "").strip()
    # A build cut off by a TLS-intercepting proxy: said in the first line, with the command that fixes it.
    tls = (cert_failure_line(logs.build_log, logs.exception, message)
           if o.error_kind in (ErrorKind.ENVIRONMENT_BUILD_FAILURE, ErrorKind.INFRASTRUCTURE_ERROR) else None)
    text = f"{o.error_kind.value}: {tls or message or '(no message)'}{_where(o)}"
    if o.error_kind in (ErrorKind.ENVIRONMENT_BUILD_FAILURE, ErrorKind.INFRASTRUCTURE_ERROR):
        pulled = pull_failure(logs.build_log, logs.exception, message, logs.trial_log)
        if pulled:
            text += f"\n{pull_hint(_task_arg(o, logs), pulled)}\npull error:\n{_indent(pulled)}"
        elif o.error_kind is ErrorKind.ENVIRONMENT_BUILD_FAILURE:
            for source, log in (("environment/build.log", logs.build_log), ("exception.txt", logs.exception),
                                ("the error message", message)):
                if line := build_error(log):
                    text += f"\nbuild error, from {source}:\n{_indent(line)}"
                    break
            else:
                if logs.build_log.strip():
                    text += "\n" + quote(logs.build_log, 8, "environment/build.log")
    elif o.error_kind in (ErrorKind.VERIFIER_ERROR, ErrorKind.REWARD_MISSING):
        text += "\n" + quote(logs.test_stdout, 8)
    elif o.error_kind in (ErrorKind.AGENT_ERROR, ErrorKind.AGENT_TIMEOUT) and logs.exception.strip():
        text += "\n" + quote(logs.exception, 6, "exception.txt")
    return text


def explain_low_score(o: TrialOutcome, logs: TrialLogs | None = None) -> str:
    """Why the tests scored the reference solution below 1.0, in the files' own words (`run_digest`): the failing
    tests (CTRF, else pytest's or unittest's lines), solve.sh's output and exit code, and the tail of test-stdout."""
    logs = logs if logs is not None else read_trial_logs(o.trial_dir)
    solve_output, solve_exit = solution_run(o.trial_dir)
    return run_digest(test_stdout=logs.test_stdout, ctrf=logs.ctrf, reward=o.reward, solve_output=solve_output,
                      solve_exit=solve_exit)


class OracleVerifier:
    """The reference solution reaches reward 1.0 on every one of `repeats` runs (repeats catch flaky tests)."""

    name = ORACLE

    @classmethod
    def from_config(cls, config: VerificationConfig, **_: object) -> OracleVerifier:
        return cls(repeats=config.repeats)

    def __init__(self, repeats: int = 2):
        if repeats < 1:
            raise ValueError("repeats must be at least 1")
        self.repeats = repeats

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        return [TrialSpec(task_dir=task_dir, agent=ORACLE_AGENT, env=env, trials_dir=trials_dir) for _ in range(self.repeats)]

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        failed: list[Finding] = []
        unknown: list[Finding] = []  # the tests never ran, so the low score says nothing about the solution
        for i, o in enumerate(runs, 1):
            run = f"run {i}/{len(runs)}"
            if o.error_kind is not ErrorKind.OK and o.error_kind is not ErrorKind.REWARD_MISSING:
                failed.append(_found(self.name, FindingKind.FAILED, o, f"{run}: {explain_error(o)}"))
                continue
            if o.passed:
                continue
            logs = read_trial_logs(o.trial_dir)
            evidence = assess_test_log(logs.test_stdout, logs.ctrf)
            if evidence.kind is EvidenceKind.NOT_RAN:
                unknown.append(_found(self.name, FindingKind.INCONCLUSIVE, o,
                                      f"{run}: inconclusive: the test runner never ran, so the reference solution was not "
                                      f"tested: {evidence.detail}{_where(o)}\n" + quote(logs.test_stdout)))
            elif o.error_kind is ErrorKind.REWARD_MISSING:
                failed.append(_found(self.name, FindingKind.FAILED, o, f"{run}: {explain_error(o, logs)}"))
            else:
                failed.append(_found(self.name, FindingKind.FAILED, o,
                                     f"{run}: the reference solution scored {o.reward}, not 1.0{_where(o)}\n"
                                     + explain_low_score(o, logs)))
        passes = sum(o.passed for o in runs)
        if failed and 0 < passes < len(runs):
            flaky = f"flaky: passed {passes} of {len(runs)} runs"
            failed.insert(0, finding(self.name, flaky))
        return _report(self.name, runs, failed, unknown)


class InvalidTestVerifier:
    """An empty solution (Harbor's nop agent) fails, and fails because of the tests.

    It passes only on evidence, read from the trial dir (see `envevo.verify._evidence`): the tests wrote
    a reward of 0 and their log shows they ran and failed (a pytest or CTRF failure, a FAIL / not ok
    line), or that they ran (pytest collected tests, PASS lines) before the script wrote the 0.

    - a reward above 0 on an untouched environment fails: the tests do not test the task;
    - a broken environment or a missing reward fails, except that a missing reward whose log shows the
      runner never ran is inconclusive;
    - a reward of 0 with a runner-never-ran signature (No module named pytest, uv: command not found,
      no tests ran, the runner's download failing, …) is inconclusive: neither a pass nor the task's fault
      as far as this verifier can tell;
    - a reward file of 0 that the tests wrote, with no results in their log but no runner error either
      (a silent shell check), passes: Harbor deletes reward files before the verifier runs, so the tests
      wrote it after they ran. Without such a file there is no evidence, and the verdict is inconclusive.
    """

    name = INVALID_TEST

    @classmethod
    def from_config(cls, config: VerificationConfig, **_: object) -> InvalidTestVerifier:
        return cls()

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        return [TrialSpec(task_dir=task_dir, agent=NOP_AGENT, env=env, trials_dir=trials_dir)]

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        failed: list[Finding] = []
        unknown: list[Finding] = []
        for o in runs:
            if found := self._judge_run(o):
                (unknown if found.kind is FindingKind.INCONCLUSIVE else failed).append(found)
        return _report(self.name, runs, failed, unknown)

    def _judge_run(self, o: TrialOutcome) -> Finding | None:
        """What one run of the empty solution shows; None when the tests ran and failed it, as they should."""
        logs = read_trial_logs(o.trial_dir)
        evidence = assess_test_log(logs.test_stdout, logs.ctrf)
        fail, unsure = FindingKind.FAILED, FindingKind.INCONCLUSIVE
        if o.error_kind is ErrorKind.REWARD_MISSING:
            if evidence.kind is EvidenceKind.NOT_RAN:
                return _found(self.name, unsure, o, "inconclusive: the tests wrote no reward and the test runner never "
                              f"ran: {evidence.detail}{_where(o)}\n" + quote(logs.test_stdout))
            return _found(self.name, fail, o, f"the tests wrote no reward on an untouched environment: {explain_error(o, logs)}")
        if o.error_kind is not ErrorKind.OK:
            return _found(self.name, fail, o, f"the empty solution did not fail on the tests but on {explain_error(o, logs)}")
        if o.reward is None or o.reward > 0.0:
            return _found(self.name, fail, o, f"the tests pass on an untouched environment (reward {o.reward}); they do "
                          f"not test the task{_where(o)}\n" + quote(logs.test_stdout, 8))
        if evidence.kind is EvidenceKind.NOT_RAN:
            return _found(self.name, unsure, o, f"inconclusive: reward 0, but the test runner never ran: {evidence.detail}"
                          f"{_where(o)}\n" + quote(logs.test_stdout))
        if not evidence and logs.reward is None:
            return _found(self.name, unsure, o, "inconclusive: reward 0, but no evidence that the tests ran and failed: "
                          f"{evidence.detail}{_where(o)}\n" + quote(logs.test_stdout))
        # Otherwise the tests wrote the 0 themselves (Harbor removes reward files before the verifier runs)
        # and nothing in their log says the runner failed to start: a plain shell check that prints nothing.
        return None
