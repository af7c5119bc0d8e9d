"""Equivalent near misses are not survivors, and tests that miss a real one make a task weak, not failed (issue 36):
the three third-party-style fixtures verified in real containers with every mutant run.

- cleanup-tail: solve.sh ends in `rm -rf /tmp/build`; the prefix without it ends as the solution does outside the
  temp dirs → equivalent, and the task is ok;
- chmod-interpreter: solve.sh ends in `chmod +x` of a script that is already executable and that the tests run
  through `python3` → equivalent, ok;
- partial-output: the tests check only the first line of the output; the prefix that writes only that line
  survives with a different end state → weak (exit 4), naming the path that differs.

11 trials (oracle ×1, nop and the mutants; red team off).
"""

import json
import time

import pytest

from tests.conftest import FIXTURES, run_cli

pytestmark = pytest.mark.sandbox

TASKS = ("cleanup-tail", "chmod-interpreter", "partial-output")


def test_equivalent_mutants_are_not_survivors_and_a_real_survivor_is_weak(sandbox, tmp_path):
    t0 = time.monotonic()
    proc = run_cli("verify", *(str(FIXTURES / "realistic" / t) for t in TASKS), "--mutation", "on", "--repeats", "1",
                   "--red-team", "off", "--json", "--jobs-dir", str(tmp_path / "jobs"))
    print(f"equivalent-mutant sandbox test: {time.monotonic() - t0:.0f} s")
    verdicts = {v["task"]: v for v in json.loads(proc.stdout)}
    said = json.dumps({t: {k: verdicts[t].get(k) for k in ("status", "survivors", "equivalent")} | {
        "mutation": verdicts[t]["mutation"]["reasons"] + verdicts[t]["mutation"]["notes"]} for t in TASKS}, indent=1)
    assert {t: verdicts[t]["status"] for t in TASKS} == {
        "cleanup-tail": "ok", "chmod-interpreter": "ok", "partial-output": "weak"}, said
    assert proc.returncode == 4, proc.stderr  # weak, none failed nor inconclusive

    assert verdicts["cleanup-tail"]["equivalent"] == ["prefix-4of5"], said
    assert verdicts["cleanup-tail"]["mutation"]["metrics"]["killed"] == 2, said
    assert verdicts["chmod-interpreter"]["equivalent"] == ["prefix-2of3"], said

    weak = verdicts["partial-output"]
    assert weak["survivors"] == ["prefix-2of3"] and weak["equivalent"] == [], said
    assert weak["mutation"]["weak"] and not weak["mutation"]["passed"], said
    assert "differs from the solution's at: /app/summary.txt (content)" in weak["mutation"]["reasons"][0], said
