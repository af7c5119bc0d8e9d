"""`envevo harden` of one task against `envevo verify --red-team on` of the same task, side by side in one run.

Issue 34's bound: harden costs at most 2× the verify. Both run as a user runs them (the CLI, in a child process,
the same concurrency and mutation setting), verify first so that both meet a built image cache.

    .venv/bin/python benchmarks/harden_cost.py [TASK_DIR] [--concurrency N] [--rounds N] [--mutation M] [--no-warm]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENVEVO = [sys.executable, "-m", "envevo.cli"]


def timed(args: list[str], show: bool = False) -> tuple[float, int]:
    t0 = time.monotonic()
    r = subprocess.run([*ENVEVO, *args], capture_output=True, text=True, cwd=ROOT)
    if show:  # the command's own table: what was measured, beside how long it took
        print(r.stdout, end="", flush=True)
    return time.monotonic() - t0, r.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", nargs="?", default=str(ROOT / "tests" / "fixtures" / "public" / "tb2-pypi"))
    ap.add_argument("--concurrency", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--mutation", default="sample:4", help="both sides' --mutation (default: verify's default)")
    ap.add_argument("--no-warm", action="store_true", help="skip the untimed warm-up verify (the images of the task "
                    "and of its hardened copy are built already)")
    args = ap.parse_args()
    common = ["--trial-concurrency", str(args.concurrency), "--mutation", args.mutation]
    ratios, verifies, hardens = [], [], []
    with tempfile.TemporaryDirectory(prefix="harden-cost-") as tmp:
        if not args.no_warm:
            timed(["verify", args.task, "--red-team", "on", "--jobs-dir", f"{tmp}/warm", *common])  # images built
        for i in range(args.rounds):
            v, v_rc = timed(["verify", args.task, "--red-team", "on", "--jobs-dir", f"{tmp}/v{i}", *common], show=True)
            h, h_rc = timed(["harden", args.task, "--out", f"{tmp}/out{i}", "--jobs-dir", f"{tmp}/h{i}", *common],
                            show=True)
            verifies.append(v)
            hardens.append(h)
            ratios.append(h / v)
            print(f"round {i + 1}: verify --red-team on {v:.1f} s (exit {v_rc}), harden {h:.1f} s (exit {h_rc}), "
                  f"ratio {h / v:.2f}×", flush=True)
    print(f"median: verify {statistics.median(verifies):.1f} s, harden {statistics.median(hardens):.1f} s, "
          f"harden / verify {statistics.median(hardens) / statistics.median(verifies):.2f}× (target ≤ 2×)")


if __name__ == "__main__":
    main()
