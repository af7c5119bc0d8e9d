"""Evolution throughput: accepted generations per hour, candidate acceptance rate, and the share of wall time
spent in verification (the sandboxes) rather than in envevo itself.

    python benchmarks/evolve_throughput.py                      # seed + evolve 5 generations in a temp dir
    python benchmarks/evolve_throughput.py --generations 8 --length 3 --seed 7
    python benchmarks/evolve_throughput.py --run RUN_DIR         # read a finished run's store instead
    python benchmarks/evolve_throughput.py --side-by-side --generations 4   # red-team reuse off, then on
    python benchmarks/evolve_throughput.py --envs podman,bwrap --generations 4  # the same evolution on each backend
    python benchmarks/evolve_throughput.py --envs podman@before,bwrap@before,bwrap --before-tree /tmp/before
        # today's paths (a `git archive` of the commit before) and this tree's, side by side in one run

`--side-by-side` evolves the same seed twice in one run, first with the red team's reuse of a parent's verdicts
off (ENVEVO_RED_TEAM_REUSE=off: today's path), then on, and prints both with the trials per candidate by kind (run
and reused), the machine's load, and whether the two lineages agree version for version (task hash, ξ, D_T, every
candidate's verdicts).

A fresh run measures its own wall time; a stored run uses the span between its first and last record.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


# A trial kind: (verifier, metric of trials run or None for len(runs), metric of trials reused or None)
KINDS = {"oracle": ("oracle", None, None), "nop": ("invalid_test", None, None),
         "exploits": ("red_team", "trials_run", "trials_reused"), "mutants": ("mutation", "run", "reused")}


def trials_by_kind(run: Path) -> dict[str, dict[str, float]]:
    """Per verified candidate, the trials run and reused of each kind (averaged over the candidates)."""
    out = {k: {"run": 0.0, "reused": 0.0} for k in KINDS}
    with LineageStore.open(run, create=False) as store:
        cands = [c for lin in store.lineages() for c in store.candidates(lin.id) if c.task_hash]
        for c in cands:
            rows = {v.verifier: v for v in store.verifications(c.id)}
            for kind, (verifier, ran, reused) in KINDS.items():
                if (v := rows.get(verifier)) is not None:
                    out[kind]["run"] += v.metrics.get(ran, len(v.runs)) if ran else len(v.runs)
                    out[kind]["reused"] += v.metrics.get(reused, 0) if reused else 0
    n = max(len(cands), 1)
    return {k: {m: round(x / n, 2) for m, x in d.items()} for k, d in out.items()}


def lineage_digest(run: Path) -> list[dict]:
    """What must not change with reuse: per version its task hash, ξ and D_T, and every candidate's verdicts."""
    with LineageStore.open(run, create=False) as store:
        out: list[dict] = []
        for lin in store.lineages():
            out += [{"generation": v.generation, "task_hash": v.task_hash,
                     "trace": v.trace.model_dump_json() if v.trace else None,
                     "D_T": v.difficulty.model_dump_json() if v.difficulty else None} for v in store.versions(lin.id)]
            out += [{"candidate": (c.generation, c.attempt, c.task_hash, c.accepted),
                     "verdicts": sorted((r.verifier, r.passed, r.inconclusive, sorted(f.exploit or "" for f in r.findings))
                                        for r in store.verifications(c.id))} for c in store.candidates(lin.id)]
    return out


def fresh_run(tmp: Path, generations: int, length: int, seed: int, name: str = "run",
              env: dict[str, str] | None = None, sandbox: str = "podman") -> tuple[Path, float]:
    envevo = [sys.executable, "-m", "envevo.cli"]
    if not (tmp / "seed").exists():
        subprocess.run([*envevo, "seed", "procedural", str(tmp / "seed"), "--length", str(length), "--seed", str(seed)],
                       check=True, capture_output=True)
    t0, cpu0 = time.monotonic(), _children_cpu()
    subprocess.run([*envevo, "evolve", str(tmp / "seed"), "--run", str(tmp / name), "--generations", str(generations),
                    "--env", sandbox], check=True, capture_output=True, env={**os.environ, **(env or {})})
    CPU[tmp / name] = _children_cpu() - cpu0
    return tmp / name, time.monotonic() - t0


# CPU seconds (user + system) of each fresh run: envevo and every process it started and reaped, a bwrap sandbox's
# included; a podman container's are not (its processes belong to conmon). On a machine shared with others this is
# the figure the load does not move much: 2 cores give at most 7,200 CPU seconds an hour.
CPU: dict[Path, float] = {}


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def side_by_side(tmp: Path, generations: int, length: int, seed: int) -> dict:
    out: dict = {"load_before": os.getloadavg()}
    for name, reuse in (("reuse_off", "off"), ("reuse_on", "on")):
        run, wall = fresh_run(tmp, generations, length, seed, name, {"ENVEVO_RED_TEAM_REUSE": reuse})
        out[name] = {**measure(run, wall), "trials_per_candidate": trials_by_kind(run), "load_after": os.getloadavg()}
    out["same_lineage"] = lineage_digest(tmp / "reuse_off") == lineage_digest(tmp / "reuse_on")
    return out


def envs_side_by_side(tmp: Path, envs: list[str], generations: int, length: int, seed: int,
                      before: Path | None = None) -> dict:
    """The same evolution on each sandbox backend (`--env`), one after the other in one run, with the load.
    `bwrap@before` runs envevo from the tree `before` (e.g. `git archive` of the commit before a change)."""
    out: dict = {"load_before": os.getloadavg()}
    for i, sandbox in enumerate(envs):
        backend, _, tree = sandbox.partition("@")
        tree = tree.split("#")[0]  # NAME#2: a second run of the same, interleaved with the others (load drifts)
        if tree and before is None:
            raise SystemExit(f"{sandbox}: give --before-tree DIR (the envevo tree to run as '@{tree}')")
        env = {"PYTHONPATH": str(before)} if tree and before is not None else {"PYTHONPATH": str(ROOT)}
        run, wall = fresh_run(tmp, generations, length, seed, f"env_{i}_{sandbox}", env, sandbox=backend.split("#")[0])
        row = measure(run, wall)
        cpu = CPU[run]
        out[sandbox] = {**row, "cpu_s": round(cpu, 1),
                        "cpu_s_per_accepted_generation": round(cpu / max(row["accepted_generations"], 1), 1),
                        "trials_per_candidate": trials_by_kind(run), "load_after": os.getloadavg()}
    digests = [lineage_digest(tmp / f"env_{i}_{e}") for i, e in enumerate(envs)]
    out["same_lineage"] = all(d == digests[0] for d in digests)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path)
    ap.add_argument("--generations", type=int, default=5)
    ap.add_argument("--length", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--side-by-side", action="store_true", help="red-team reuse off, then on, on the same seed")
    ap.add_argument("--env", default="podman", help="the sandbox backend of a fresh run (envevo evolve --env)")
    ap.add_argument("--envs", help="comma-separated backends to run side by side on the same seed (podman,bwrap)")
    ap.add_argument("--before-tree", type=Path, help="with --envs NAME@before: the envevo source tree to run as 'before'")
    ap.add_argument("--keep", type=Path, help="with --envs: keep the runs in this new dir (to inspect a difference)")
    args = ap.parse_args()
    if args.envs:
        with tempfile.TemporaryDirectory() as tmp:
            where = args.keep or Path(tmp)
            where.mkdir(parents=True, exist_ok=True)
            each = envs_side_by_side(where, args.envs.split(","), args.generations, args.length, args.seed,
                                    args.before_tree)
        print(json.dumps(each, indent=None if args.json else 2))
        return
    if args.side_by_side:
        with tempfile.TemporaryDirectory() as tmp:
            both = side_by_side(Path(tmp), args.generations, args.length, args.seed)
        print(json.dumps(both, indent=None if args.json else 2))
        return
    if args.run:
        result = measure(args.run, None)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run, wall = fresh_run(Path(tmp), args.generations, args.length, args.seed, sandbox=args.env)
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
