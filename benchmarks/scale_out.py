"""Scale-out of `envevo evolve --executor ray` on the fake remote Harbor environment (tests/fakes/remote_env.py:
provider latency, no containers), side by side on 1, 2 and 4 Ray worker nodes of one local cluster, with the
default verifiers (2 oracle runs, the red team, the mutation verifier's sample of 4 near misses).

Prints, per worker count: the wall time of the same evolution (LINEAGES procedural lineages × GENERATIONS), the
speedup over one worker and the efficiency (speedup / workers); and the driver's overhead per generation (its CPU
seconds while the run lasts: dispatch, replay of the records, the commit, divided by the generations) against a
generation's wall time on a worker, whence the projected number of workers one driver can feed.

    .venv/bin/python benchmarks/scale_out.py [--workers 1,2,4] [--lineages 8] [--generations 1] [--latency 1.0] [--json]

What is simulated and what is measured: the fake runs nothing, so the provider's round trip (`--latency` seconds
per start, exec, upload, download) is a sleep, and every verdict is the fake's model of perfect tests (the reference
solution 1; the empty agent, each exploit and each near miss 0). Everything else is envevo's real work, measured:
the engine's candidates, the verifiers' planning and judging, the trial loop, the drift encoder at each commit, Ray's
dispatch and the driver's commit. On a 2-core machine more workers than cores is honest only while the provider's
wait dominates.

A run that commits fewer generations than it asked for is an error (exit 1, one line naming the lineages'
statuses), not a figure: its wall time would measure rejections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.fakes, from a checkout

ENV = "tests.fakes.remote_env:FakeRemoteEnvironment"
OBJECT_STORE = 80 * 1024**2


def seeds(n: int):
    from envevo.catalog import random_chain
    from envevo.evolve.engines.procedural import compose

    return [(f"seed{i}", compose(random_chain(None, 2, 500 + i))) for i in range(n)]


def config(args):
    from envevo.evolve import EvolveConfig

    # The default verifiers; no drift bound (a procedural edit may drift: a rejection is not what this measures).
    return EvolveConfig(generations=args.generations, env=ENV, trial_concurrency=4, lineage_concurrency=args.lineages,
                        seed=1, max_drift=None)


class NothingCommitted(Exception):
    """The run committed fewer generations than asked: no scale-out figure can come from it."""


def warm(ray, nodes: int) -> None:
    """Import envevo and Harbor once in a worker process of every node, so the timed run measures the work."""
    @ray.remote(num_cpus=1)
    def load() -> str:
        import envevo.evolve._ray  # noqa: F401
        import envevo.runtime._trial  # noqa: F401
        from envevo.errors import UserError
        from envevo.trace import measure_drift

        seed = seeds(1)[0][1]
        try:  # the sentence encoder a commit's drift needs, loaded once per worker process
            measure_drift(seed, seed, None)
        except UserError:
            pass

        time.sleep(1)  # hold the CPU: the next load lands on another node
        return ray.get_runtime_context().get_node_id()

    got = set(ray.get([load.remote() for _ in range(nodes * 2)]))
    assert len(got) == nodes, f"warmed {len(got)} of {nodes} nodes"


def seeded(args, where: Path) -> list[str]:
    """The lineages, their seeds through the seed gate once, on the driver (untimed): each worker count evolves a
    copy of this store, so the gate's trials are not paid again per run."""
    from envevo.evolve import make_engine, start_lineages
    from envevo.store import LineageStore

    engine, checks = make_engine("procedural", env=ENV)
    with LineageStore.open(where) as store:
        gate = config(args).model_copy(update={"trial_concurrency": 16})  # setup, not measured: as fast as it goes
        ids = asyncio.run(start_lineages(store, seeds(args.lineages), engine, gate, checks=checks))
    if len(ids) != args.lineages:
        raise NothingCommitted(f"{args.lineages - len(ids)} of {args.lineages} seeds rejected at the seed gate")
    return ids


def one(args, workers: int, template: Path, ids: list[str]) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from envevo.evolve import evolve, make_engine, make_executor
    from envevo.store import LineageStore

    cfg = config(args)
    engine, checks = make_engine("procedural", env=ENV)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": OBJECT_STORE})
    try:
        for _ in range(workers):
            cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        warm(ray, workers)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(template, Path(tmp) / "run")
            with LineageStore.open(Path(tmp) / "run", create=False) as store:
                async def main() -> tuple[float, float, dict[str, str]]:
                    executor = make_executor("ray", address=cluster.address)
                    t0, c0 = time.monotonic(), time.process_time()
                    statuses = await evolve(store, ids, engine, cfg, checks=checks, executor=executor)
                    return time.monotonic() - t0, time.process_time() - c0, statuses

                wall, cpu, statuses = asyncio.run(main())
                problems = store.check()
                if problems:
                    raise NothingCommitted(f"the store does not check clean: {problems[:3]}")
                generations = sum(v.generation > 0 for v in store.versions())
                # Candidates per lineage: a rejected one costs its lineage another round, so with as many lineages
                # as workers the wall is the lineage that needed the most.
                tried = [len(store.candidates(lid)) for lid in ids]
                if generations != len(ids) * args.generations:
                    rejected = [r for lid in ids for c in store.candidates(lid) if not c.accepted for r in c.reasons[:1]]
                    raise NothingCommitted(
                        f"{workers} worker(s): {generations} of {len(ids) * args.generations} generations committed "
                        f"(lineages: {', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}); {len(rejected)} "
                        f"candidates rejected, the first: {rejected[0].splitlines()[0][:200] if rejected else '-'}")
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {"workers": workers, "wall_s": wall, "driver_cpu_s": cpu, "generations": generations,
            "candidates": sum(tried), "most_candidates_in_a_lineage": max(tried)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--lineages", type=int, default=8)
    p.add_argument("--generations", type=int, default=1)
    p.add_argument("--latency", type=float, default=1.0, help="seconds per provider call of the fake remote env")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.lineages < 1 or args.generations < 1:
        p.error("--lineages and --generations must be at least 1")
    os.environ["FAKE_REMOTE_LATENCY"] = str(args.latency)  # the workers inherit it from the nodes, and the path
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ids = seeded(args, Path(tmp) / "seeded")
            rows = [one(args, int(n), Path(tmp) / "seeded", ids) for n in args.workers.split(",")]
    except NothingCommitted as e:
        sys.exit(f"scale_out: no figure: {e}")
    base = rows[0]
    for r in rows:
        r["speedup"] = base["wall_s"] / r["wall_s"]
        r["efficiency"] = r["speedup"] / (r["workers"] / base["workers"])
        r["driver_overhead_per_generation_s"] = r["driver_cpu_s"] / r["generations"]
    # A generation's wall time on one worker (the 1-worker run runs them one after another).
    per_generation = base["wall_s"] * base["workers"] / base["generations"]
    overhead = max(r["driver_overhead_per_generation_s"] for r in rows)
    summary = {"latency_s": args.latency, "lineages": args.lineages, "generations_per_lineage": args.generations,
               "generation_wall_on_a_worker_s": per_generation, "driver_overhead_per_generation_s": overhead,
               "projected_max_workers_per_driver": int(per_generation / overhead), "runs": rows}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"fake remote env, {args.latency:.2f} s per provider call (simulated: a sleep; verdicts simulated as perfect "
          f"tests'); {args.lineages} lineages × {args.generations} generations, default verifiers (2 oracle runs, "
          "red team, 4 mutants)")
    print(f"{'workers':>7} {'wall s':>8} {'speedup':>8} {'efficiency':>10} {'driver CPU s/gen':>17} "
          f"{'candidates (most in a lineage)':>31}")
    for r in rows:
        print(f"{r['workers']:>7} {r['wall_s']:>8.1f} {r['speedup']:>8.2f} {r['efficiency']:>10.2f} "
              f"{r['driver_overhead_per_generation_s']:>17.3f} {r['candidates']:>23} ({r['most_candidates_in_a_lineage']})")
    print(f"a generation on one worker: {per_generation:.1f} s; the driver's overhead: {overhead:.3f} CPU s per "
          f"generation → one driver feeds about {summary['projected_max_workers_per_driver']} workers")


if __name__ == "__main__":
    main()
