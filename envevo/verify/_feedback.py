"""What a failed run shows whoever must fix the task: a short digest of the files the run left, not a path to them.

The same digest serves the verifiers' reasons (from a trial dir on the host) and the Modifier's `run_tests` tool
(from the output of solve.sh and test.sh in its own sandbox), so a model sees one format wherever a run failed:

    reward 0.0 (solve.sh exited 2)
    failing tests (ctrf.json):
      | test_summary: AssertionError: assert 41 == 42
    last 8 lines of solve.sh's output:
      | …
    last 12 lines of test-stdout:
      | …

Failing tests come from the CTRF report when the tests wrote one, else from pytest's or unittest's failure lines,
else from per-check `FAIL <check>` and TAP `not ok` lines.
Pure functions over text; nothing here runs anything.
"""

from __future__ import annotations

from pathlib import Path

from envevo.verify._evidence import _CHECK_FAIL, _TAP_NOT_OK, _read, clean_lines, pytest_failure_lines, quote, tail

ORACLE_LOG = "agent/oracle.txt"  # what Harbor's oracle agent captured of solve.sh (stdout and stderr)
ORACLE_EXIT = "agent/exit-code.txt"  # written by Harbor only when solve.sh exited non-zero
FAILING_MAX = 8
SOLVE_TAIL = 8
TEST_TAIL = 12
_MESSAGE_CHARS = 240


def ctrf_failures(ctrf: dict | None, n: int = FAILING_MAX) -> list[str]:
    """`name: first line of the message` for each failed (or errored) test of a CTRF report, at most n."""
    results = ctrf.get("results", ctrf) if isinstance(ctrf, dict) else None
    tests = results.get("tests") if isinstance(results, dict) else None
    out: list[str] = []
    for t in tests if isinstance(tests, list) else []:
        if not isinstance(t, dict) or str(t.get("status", "")).lower() not in ("failed", "error", "errored"):
            continue
        message = next((ln.strip() for ln in clean_lines(str(t.get("message") or t.get("trace") or "")) if ln.strip()), "")
        out.append(f"{t.get('name', '?')}: {message[:_MESSAGE_CHARS]}" if message else str(t.get("name", "?")))
    if len(out) > n:
        out = out[:n] + [f"… and {len(out) - n} more"]
    return out


def failing_tests(test_stdout: str, ctrf: dict | None = None, n: int = FAILING_MAX) -> tuple[str, list[str]]:
    """(where they come from, the lines) of the tests that failed: CTRF first, else the test log's failure lines."""
    if lines := ctrf_failures(ctrf, n):
        return "ctrf.json", lines
    if lines := pytest_failure_lines(test_stdout, n):
        return "test-stdout", lines
    # Per-check lines (FAIL <check>: why, as envevo's seeds print them) and TAP's `not ok`.
    checks = [ln.strip() for ln in clean_lines(test_stdout) if _CHECK_FAIL.match(ln.strip()) or _TAP_NOT_OK.match(ln.strip())]
    return "test-stdout", checks[-n:]


def _block(title: str, lines: list[str]) -> str:
    return title + ":\n" + "\n".join("  | " + ln for ln in lines)


def run_digest(*, test_stdout: str, ctrf: dict | None = None, reward: float | None = None,
               solve_output: str | None = None, solve_exit: int | None = None, tests_ran: bool = True) -> str:
    """The digest of one run of solve.sh (None: no solution ran, e.g. the empty agent) then test.sh."""
    head = f"reward {reward}" if reward is not None else "no reward written (/logs/verifier/reward.txt or reward.json)"
    if solve_output is not None:
        head += f" (solve.sh exited {solve_exit})" if solve_exit else " (solve.sh exited 0)"
    parts = [head]
    if tests_ran:
        source, failing = failing_tests(test_stdout, ctrf)
        if failing:
            parts.append(_block(f"failing tests ({source})", failing))
    if solve_output is not None and (solve_exit or reward is None or reward < 1.0):
        parts.append(quote(solve_output, SOLVE_TAIL, "solve.sh's output") if tail(solve_output)
                     else "solve.sh printed nothing")
    if tests_ran:
        parts.append(quote(test_stdout, TEST_TAIL))
    return "\n".join(parts)


def solution_run(trial_dir: Path | None) -> tuple[str | None, int | None]:
    """(solve.sh's captured output, its exit code) from an oracle trial dir; (None, None) when it has none."""
    if trial_dir is None or not (Path(trial_dir) / ORACLE_LOG).exists():
        return None, None
    code_text = _read(Path(trial_dir) / ORACLE_EXIT).strip()
    try:
        code = int(code_text) if code_text else 0
    except ValueError:
        code = None
    return _read(Path(trial_dir) / ORACLE_LOG), code
