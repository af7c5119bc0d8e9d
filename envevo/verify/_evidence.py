"""What a finished trial's logs prove: did the tests run, did they fail, and why did a trial break.

Pure functions over text and over a trial directory on the host; nothing here executes anything or
touches a container. The verifiers (`_verifiers.py`) use them to decide and to explain.

A Harbor trial dir holds (any of them may be missing)::

    verifier/test-stdout.txt   the test script's stdout and stderr, merged
    verifier/test-stderr.txt   stderr, when an environment keeps it apart
    verifier/reward.txt | reward.json
    verifier/ctrf.json         a CTRF report, when the tests write one
    environment/build.log      the image build's output (envevo's own runtime; or environment/*/build.log)
    exception.txt, trial.log, result.json

Evidence that the tests ran and failed (any one suffices; `failure_evidence`):

- pytest: a session summary with failures (``=== 1 failed, 2 passed in 0.31s ===``) or a short-summary
  line ``FAILED tests/test_x.py::test_y``; failures that are all import errors (``FAILED … -
  ModuleNotFoundError``) do not count: the test's dependencies were missing, the task was not judged;
- a CTRF report whose summary counts a failed test;
- per-check lines, as envevo's procedural tests and the seeds print them: ``FAIL <check> …``
  (also unittest's ``FAIL: test_x``), ``N check(s) failed`` with N > 0, ``N of M checks passed`` with N < M;
- TAP: ``not ok 3 - description``.

Evidence that the tests ran, without a failure line (`run_evidence`): pytest collected N > 0 items or
summarised passed tests, a CTRF report with tests, a ``PASS …`` / TAP ``ok …`` line. Together with a
reward of 0 this is the narrow "reward written after the tests ran" rule: the runner demonstrably ran
its tests inside the test script, and the script then wrote 0 (e.g. a check after pytest failed, or the
log was cut short). A reward of 0 with no such line (an empty log, only install chatter, a silent shell
test) is no evidence: the runner may never have started.

Signatures of a runner that never ran (`runner_missing`) make a reward of 0 inconclusive, never a pass,
unless failure evidence is also present (a test's own assertion may quote "No such file or directory").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

TEST_STDOUT = "verifier/test-stdout.txt"
TEST_STDERR = "verifier/test-stderr.txt"
CTRF = "verifier/ctrf.json"
BUILD_LOG = "environment/build.log"  # also found deeper: environment/<service>/build.log
TAIL_LINES = 20
_MAX_LINE = 300  # characters kept of any one quoted line

# ---- reading a trial dir --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialLogs:
    """The text a trial left on the host; empty strings (or None) where a file is missing."""

    trial_dir: Path | None = None
    test_stdout: str = ""
    ctrf: dict | None = None
    reward: float | None = None
    exception: str = ""
    build_log: str = ""
    trial_log: str = ""
    result: dict = field(default_factory=dict)

    @property
    def task_path(self) -> str | None:
        """The task dir the trial ran, as Harbor's result.json records it."""
        task = (self.result.get("config") or {}).get("task") or {}
        path = task.get("path") if isinstance(task, dict) else None
        return str(path) if path else None


def _read(path: Path, limit: int = 2_000_000) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))  # a huge log: its end is what explains it
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _read_json(path: Path) -> dict | None:
    text = _read(path)
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_reward(verifier_dir: Path) -> float | None:
    """The reward the tests wrote: reward.txt's number, or reward.json's "reward" (else its first number)."""
    return reward_of(_read(verifier_dir / "reward.txt"), _read(verifier_dir / "reward.json"))


def reward_of(reward_txt: str, reward_json: str = "") -> float | None:
    """`read_reward` over the two files' texts (e.g. read from a sandbox by `cat`); empty texts: no reward."""
    text = reward_txt.strip()
    if text:
        try:
            return float(text.split()[0])
        except ValueError:
            pass
    try:
        data = json.loads(reward_json) if reward_json.strip() else None
    except ValueError:
        data = None
    if isinstance(data, dict):
        value = data.get("reward", next((v for v in data.values() if isinstance(v, (int, float))), None))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _build_logs(trial_dir: Path) -> str:
    """environment/build.log, then any build.log below environment/ (one per built service), joined."""
    paths = [trial_dir / BUILD_LOG]
    env_dir = trial_dir / "environment"
    if env_dir.is_dir():
        paths += sorted(p for p in env_dir.rglob("build.log") if p != paths[0])
    return "\n".join(t for t in (_read(p) for p in paths) if t.strip())


def read_trial_logs(trial_dir: Path | None) -> TrialLogs:
    """Everything `judge` needs from a trial dir; a missing dir gives empty logs, never an error."""
    if trial_dir is None:
        return TrialLogs()
    trial_dir = Path(trial_dir)
    stdout = _read(trial_dir / TEST_STDOUT)
    stderr = _read(trial_dir / TEST_STDERR)
    if stderr.strip():
        stdout = (stdout.rstrip("\n") + "\n" + stderr) if stdout.strip() else stderr
    return TrialLogs(
        trial_dir=trial_dir,
        test_stdout=stdout,
        ctrf=_read_json(trial_dir / CTRF),
        reward=read_reward(trial_dir / "verifier"),
        exception=_read(trial_dir / "exception.txt"),
        build_log=_build_logs(trial_dir),
        trial_log=_read(trial_dir / "trial.log"),
        result=_read_json(trial_dir / "result.json") or {},
    )


# ---- quoting ------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def clean_lines(text: str) -> list[str]:
    """Lines without ANSI colours, carriage-return progress or trailing blanks."""
    out = []
    for raw in _ANSI.sub("", text or "").splitlines():
        line = raw.rsplit("\r", 1)[-1].rstrip()
        out.append(line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " …")
    return out


def tail(text: str, n: int = TAIL_LINES) -> str:
    """The last n non-empty lines of a log, trimmed, joined by newlines."""
    lines = [ln for ln in clean_lines(text) if ln.strip()]
    return "\n".join(lines[-n:])


def quote(text: str, n: int = TAIL_LINES, label: str = "test-stdout") -> str:
    """A log tail set off for a reason string, or a note that the log is empty."""
    t = tail(text, n)
    if not t:
        return f"{label}: (empty)"
    return f"last {min(n, t.count(chr(10)) + 1)} lines of {label}:\n" + "\n".join("  | " + ln for ln in t.splitlines())


# ---- did the tests fail, run, or never start ------------------------------------------------------------

_PYTEST_SUMMARY = re.compile(
    r"^=+ (.*\b(?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|no tests ran)\b.*) =+$"  # the session's last line
    r"|^(\d+ (?:failed|passed|errors?|skipped)\b.* in [\d.]+s\b.*)$"  # the same under -q: no rule of "="
)
_PYTEST_FAILED_N = re.compile(r"\b(\d+) failed\b")
_PYTEST_PASSED_N = re.compile(r"\b(\d+) passed\b")
_PYTEST_FAILED_LINE = re.compile(r"^FAILED \S+")
_PYTEST_COLLECTED = re.compile(r"^collected (\d+) items?\b|^collecting \.\.\. collected (\d+) items?\b")
_IMPORT_ERROR = re.compile(r"ModuleNotFoundError|ImportError|No module named")
_CHECK_FAIL = re.compile(r"^(?:FAIL|FAILED)(?::\s*|\s+)\S")  # FAIL <check>, FAIL: test_x (unittest), FAILED <id>
_CHECK_PASS = re.compile(r"^(?:PASS|PASSED)(?::\s*|\s+)\S")
_TAP_NOT_OK = re.compile(r"^not ok\b")
_TAP_OK = re.compile(r"^ok\b(?:\s+\d+)?(?:\s+-)?\s*\S")
_N_CHECKS_FAILED = re.compile(r"\b(\d+) checks?(?:\(s\))? failed\b", re.I)
_N_OF_M_PASSED = re.compile(r"\b(\d+) of (\d+) checks? passed\b", re.I)
_ALL_CHECKS_PASSED = re.compile(r"\ball (?:\d+ )?checks?(?:\(s\))? passed\b", re.I)

# Runner-never-ran signatures. Each is a (regex, what it means) pair; the first match names the cause.
_RUNNERS = (r"(?:pytest|py\.test|python3?(?:\.\d+)?|uvx?|pip3?|poetry|node|npm|npx|bats|go|cargo|bash|sh"
            r"|run-tests\.sh|test\.sh|test_outputs\.py)")
_NOT_RAN: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"No module named '?pytest'?|No module named '?_pytest"), "pytest is not installed in the test environment"),
    (re.compile(rf"(?:^|[\s:]){_RUNNERS}: (?:command )?not found\b", re.M),
     "the test runner is not installed (command not found)"),
    (re.compile(rf"(?:^|[\s:'\"/]){_RUNNERS}['\"]?: No such file or directory"),
     "the test runner does not exist (No such file or directory)"),
    (re.compile(r"can't open file .*No such file or directory"), "the test script could not be opened"),
    (re.compile(r"(?:bad interpreter|exec format error|cannot execute binary file)", re.I), "the test runner cannot be executed"),
    (re.compile(r"ERROR: file or directory not found:|ERROR: file not found:"), "pytest found no test file at the path it was given"),
    (re.compile(r"^=+ no tests ran\b.*=+$|^no tests ran\b", re.M), "pytest ran no tests"),
    (re.compile(r"^collected 0 items\b", re.M), "pytest collected no tests"),
    (re.compile(r"(?:ERROR collecting|errors? during collection|Interrupted: \d+ errors? during collection)"),
     "the tests failed to import (collection error)"),
    (re.compile(r"ImportError while importing test module|ModuleNotFoundError"), "the tests failed to import (ModuleNotFoundError)"),
    (re.compile(r"Could not resolve host|Temporary failure in name resolution|Name or service not known|"
                r"Failed to establish a new connection|Network is unreachable|No matching distribution found|"
                r"Could not find a version that satisfies the requirement|Failed to fetch|failed to download", re.I),
     "the test runner could not be fetched at test time (no network)"),
    (re.compile(r"externally-managed-environment"), "pip refused to install the test runner (externally managed Python)"),
]


class EvidenceKind(StrEnum):
    """What a test log proves (str-valued: it compares and serializes as the plain strings it replaced)."""

    FAILED = "failed"  # the tests ran and at least one failed
    RAN = "ran"  # the tests ran; no failure line
    NOT_RAN = "not_ran"  # the test runner never ran
    NONE = "none"  # nothing either way


@dataclass(frozen=True)
class Evidence:
    """One conclusion and the log line(s) behind it."""

    kind: EvidenceKind
    detail: str  # the matching line(s), or why there is none

    def __bool__(self) -> bool:
        return self.kind in (EvidenceKind.FAILED, EvidenceKind.RAN)


def _ctrf_summary(ctrf: dict | None) -> dict:
    if not isinstance(ctrf, dict):
        return {}
    results = ctrf.get("results", ctrf)
    summary = results.get("summary") if isinstance(results, dict) else None
    return summary if isinstance(summary, dict) else {}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def failure_evidence(text: str, ctrf: dict | None = None) -> str | None:
    """The line that proves the tests ran and at least one failed, or None."""
    summary = _ctrf_summary(ctrf)
    if _int(summary.get("failed")) > 0:
        return f"ctrf.json: {summary.get('failed')} of {summary.get('tests', '?')} tests failed"
    lines = clean_lines(text)
    failed_ids = [ln for ln in lines if _PYTEST_FAILED_LINE.match(ln)]
    only_import_errors = bool(failed_ids) and all(_IMPORT_ERROR.search(ln) for ln in failed_ids)
    for ln in reversed(lines):
        m = _PYTEST_SUMMARY.match(ln.strip())
        if m and (n := _PYTEST_FAILED_N.search(m.group(1) or m.group(2))) and int(n.group(1)) > 0 and not only_import_errors:
            return ln.strip()
    if failed_ids and not only_import_errors:
        return next(ln for ln in failed_ids if not _IMPORT_ERROR.search(ln))
    for ln in lines:
        s = ln.strip()
        if _CHECK_FAIL.match(s) and not _PYTEST_FAILED_LINE.match(s):
            return s
        if _TAP_NOT_OK.match(s):
            return s
        if (m := _N_CHECKS_FAILED.search(s)) and int(m.group(1)) > 0:
            return s
        if (m := _N_OF_M_PASSED.search(s)) and int(m.group(1)) < int(m.group(2)):
            return s
        if s.startswith("AssertionError"):  # a plain `python3 test.py` whose assert failed: the test ran
            return s
    return None


def run_evidence(text: str, ctrf: dict | None = None) -> str | None:
    """The line that proves the test runner ran tests (passing or not), or None."""
    summary = _ctrf_summary(ctrf)
    if _int(summary.get("tests")) > 0:
        return f"ctrf.json: {summary.get('tests')} tests ran"
    for ln in reversed(clean_lines(text)):
        s = ln.strip()
        m = _PYTEST_SUMMARY.match(s)
        if m and (n := _PYTEST_PASSED_N.search(m.group(1) or m.group(2))) and int(n.group(1)) > 0:
            return s
        if (c := _PYTEST_COLLECTED.match(s)) and int(c.group(1) or c.group(2)) > 0:
            return s
        if _CHECK_PASS.match(s) or _TAP_OK.match(s) or _ALL_CHECKS_PASSED.search(s) or _N_OF_M_PASSED.search(s):
            return s
    return None


def runner_missing(text: str) -> tuple[str, str] | None:
    """(what it means, the matching line) when the log shows the test runner never ran, else None."""
    lines = clean_lines(text)
    for pattern, meaning in _NOT_RAN:
        for ln in lines:
            if pattern.search(ln):
                return meaning, ln.strip()
    return None


def assess_test_log(text: str, ctrf: dict | None = None) -> Evidence:
    """What the test log says, in order of strength: failed > never ran > ran > nothing."""
    if line := failure_evidence(text, ctrf):
        return Evidence(EvidenceKind.FAILED, line)
    if missing := runner_missing(text):
        return Evidence(EvidenceKind.NOT_RAN, f"{missing[0]}: {missing[1]}")
    if line := run_evidence(text, ctrf):
        return Evidence(EvidenceKind.RAN, line)
    if not tail(text):
        return Evidence(EvidenceKind.NONE, "the test log is empty: nothing shows that the tests ran")
    return Evidence(EvidenceKind.NONE, "the test log shows no test results (no pytest summary, CTRF report, PASS/FAIL or TAP lines)")





# ---- why a trial broke ------------------------------------------------------------------------------------

_PULL = re.compile(
    r"manifest unknown|pull access denied|failed to resolve (?:source metadata|reference)|name unknown|"
    r"initializing source|creating build container|repository does not exist|"
    r"requested access to the resource is denied|short-name .* did not resolve|toomanyrequests|"
    r"unable to pull|error pulling image|failed to pull|image not known|no such image|"
    r"reading manifest .* in \S+|"
    # podman's word for a `COPY --from=<image>` it could not pull.
    r"COPY --from=\S+: no stage or image found",
    re.I,
)
_IMAGE_REF = re.compile(r"\b((?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?/[\w./-]+(?::[\w.-]+)?(?:@sha256:[0-9a-f]{64})?)")
_BUILD_ERROR = re.compile(
    r"^(?:Error|ERROR|error)\b[: ]|^E: |returned a non-zero code|did not complete successfully|"
    r"exit status \d+|exit code: \d+|\bfailed to solve\b|building at STEP|Error: building",
)


def pull_failure(*texts: str) -> str | None:
    """The line saying a base image could not be pulled, or None."""
    for text in texts:
        for ln in clean_lines(text):
            if _PULL.search(ln):
                return ln.strip()
    return None


def image_in(line: str) -> str | None:
    """A registry image reference quoted in a line (docker.io/library/python:3.12-slim), if any."""
    m = _IMAGE_REF.search(line)
    return m.group(1).rstrip(".:,'\"") if m else None


def pull_hint(task: str, line: str) -> str:
    """How to provide an image that cannot be pulled: fetch it, or map it to one that exists."""
    image = image_in(line) or "<image>"
    return (f"an image the build needs (FROM or COPY --from) cannot be pulled; provide it with 'envevo doctor --fix --tasks {task}' "
            f"or map it with '--image-map {image}=<local or mirrored image>'")


def build_error(*texts: str, context: int = 4) -> str | None:
    """The build's error line and a few lines before it (the failing command's output), or None.

    The first error line is the cause; later ones are the builder unwinding. Empty texts are skipped.
    """
    for text in texts:
        lines = [ln for ln in clean_lines(text) if ln.strip()]
        for i, ln in enumerate(lines):
            if _BUILD_ERROR.search(ln.strip()):
                return "\n".join(lines[max(0, i - context): i + 1])
    return None


def pytest_failure_lines(text: str, n: int = 8) -> list[str]:
    """The lines that say which tests failed and why, last n: pytest's assertion lines (``E   assert 3 == 4``) and
    short-summary ``FAILED`` lines, unittest's ``FAIL: test_x`` headers and ``AssertionError: …`` lines."""
    keep = [ln for ln in clean_lines(text)
            if re.match(r"^E\s{2,}\S|^FAILED \S|^ERROR \S|^(?:FAIL|ERROR): \S|^\w*(?:Assertion)?Error: ", ln)]
    return keep[-n:]
