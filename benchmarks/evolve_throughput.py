"""Evolution throughput: accepted generations per hour, candidate acceptance rate, and the share of wall time
spent in verification (the sandboxes) rather than in envevo itself.

    python benchmarks/evolve_throughput.py                      # seed + evolve 5 generations in a temp dir
    python benchmarks/evolve_throughput.py --generations 8 --length 3 --seed 7
    python benchmarks/evolve_throughput.py --run RUN_DIR         # read a finished run's store instead

A fresh run measures its own wall time; a stored run uses the span between its first and last record.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envevo.store import LineageStore  # noqa: E402


def measure(run: Path, wall: float | None) -> dict:
    with LineageStore.open(run, create=False) as store:
        lineages = store.lineages()
        cands = [c for lin in lineages for c in store.candidates(lin.id)]
        verify_s = 0.0
        for c in cands:
            walls = [v.wall_seconds or 0.0 for v in store.verifications(c.id)]
            verify_s += max(walls, default=0.0)  # the verifiers of one candidate run in parallel
        committed = sum(lin.latest_generation for lin in lineages)
        if wall is None:
            stamps = [datetime.fromisoformat(x) for lin in lineages for x in (lin.created_at, lin.updated_at)]
            wall = (max(stamps) - min(stamps)).total_seconds()
    return {
        "run": str(run),
        "lineages": len(lineages),
        "accepted_generations": committed,
        "candidates": len(cands),
        "wall_s": round(wall, 1),
        "accepted_generations_per_hour": round(committed / (wall / 3600), 1) if wall else None,
        "candidate_acceptance_rate": round(sum(c.accepted for c in cands) / len(cands), 3) if cands else None,
        "verification_share_of_wall": round(verify_s / wall, 3) if wall else None,
    }


def fresh_run(tmp: Path, generations: int, length: int, seed: int) -> tuple[Path, float]:
    envevo = [sys.executable, "-m", "envevo.cli"]
    subprocess.run([*envevo, "seed", "procedural", str(tmp / "seed"), "--length", str(length), "--seed", str(seed)],
                   check=True, capture_output=True)
    t0 = time.monotonic()
    subprocess.run([*envevo, "evolve", str(tmp / "seed"), "--run", str(tmp / "run"), "--generations", str(generations)],
                   check=True, capture_output=True)
    return tmp / "run", time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path)
    ap.add_argument("--generations", type=int, default=5)
    ap.add_argument("--length", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.run:
        result = measure(args.run, None)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run, wall = fresh_run(Path(tmp), args.generations, args.length, args.seed)
            result = measure(run, wall)
    if args.json:
        print(json.dumps(result))
        return
    print(f"run {result['run']}: {result['lineages']} lineage(s), {result['candidates']} candidate(s), {result['wall_s']} s")
    print(f"  accepted generations per hour : {result['accepted_generations_per_hour']}")
    print(f"  candidate acceptance rate     : {result['candidate_acceptance_rate']}")
    print(f"  verification share of wall    : {result['verification_share_of_wall']}")


if __name__ == "__main__":
    main()
