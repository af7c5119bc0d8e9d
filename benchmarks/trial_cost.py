"""Per-trial cost of each local sandbox backend: one oracle trial of a procedural task, podman vs bwrap.

    python benchmarks/trial_cost.py                       # a fresh procedural seed, 5 rounds per backend
    python benchmarks/trial_cost.py TASK --rounds 8 --envs podman,bwrap

The backends take turns (podman, bwrap, podman, …) in one run, one trial at a time, images warm (a first untimed
trial on each), so both see the same machine load; the load average is printed before and after. Each trial is
the full Harbor trial (agent phase, separate verifier, copies), reward checked: a trial that does not reach 1.0
is reported, not timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envevo.runtime import TrialSpec, run_trials  # noqa: E402
from envevo.sandbox import activate  # noqa: E402


def one_trial(task: Path, env: str, trials: Path) -> tuple[float, dict]:
    t0 = time.monotonic()
    (out,) = asyncio.run(run_trials([TrialSpec(task_dir=task, agent="oracle", env=env, trials_dir=trials)],
                                    concurrency=1, retries=0))
    wall = time.monotonic() - t0
    if out.reward != 1.0:
        raise RuntimeError(f"{env}: the oracle scored {out.reward} ({out.error_kind}: {out.error_message})")
    return wall, out.timings.model_dump() if out.timings else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", nargs="?", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--envs", default="podman,bwrap")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    activate()
    envs = args.envs.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        task = args.task
        if task is None:
            task = Path(tmp) / "seed"
            subprocess.run([sys.executable, "-m", "envevo.cli", "seed", "procedural", str(task), "--length", "3",
                            "--seed", "7"], check=True, capture_output=True)
        trials = Path(tmp) / "trials"
        for env in envs:
            one_trial(task, env, trials)  # warm: image built, mounted, caches filled
        result: dict = {"task": str(task), "rounds": args.rounds, "load_before": os.getloadavg()}
        walls: dict[str, list[float]] = {e: [] for e in envs}
        phases: dict[str, list[dict]] = {e: [] for e in envs}
        for _ in range(args.rounds):
            for env in envs:
                wall, timing = one_trial(task, env, trials)
                walls[env].append(wall)
                phases[env].append(timing)
        result["load_after"] = os.getloadavg()
    for env in envs:
        keys = phases[env][0].keys() if phases[env] else []
        result[env] = {"median_wall_s": round(statistics.median(walls[env]), 2),
                       "walls_s": [round(w, 2) for w in walls[env]],
                       "median_phases_s": {k: round(statistics.median(p[k] or 0 for p in phases[env]), 2) for k in keys}}
    if len(envs) == 2:
        a, b = (result[e]["median_wall_s"] for e in envs)
        result["speedup"] = round(a / b, 2) if b else None
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
