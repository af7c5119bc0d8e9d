"""Scale-out of `envevo evolve --executor ray` on the fake remote Harbor environment (tests/fakes/remote_env.py:
provider latency, no containers), side by side on 1, 2 and 4 Ray worker nodes of one local cluster.

Prints, per worker count: the wall time of the same evolution (LINEAGES procedural lineages × GENERATIONS), the
speedup over one worker and the efficiency (speedup / workers); and the driver's overhead per generation (its CPU
seconds while the run lasts: dispatch, replay of the records, the commit, divided by the generations) against a
generation's wall time on a worker, whence the projected number of workers one driver can feed.

    .venv/bin/python benchmarks/scale_out.py [--workers 1,2,4] [--lineages 8] [--generations 1] [--latency 1.0] [--json]

The workers mostly wait on the provider: the fake's latency is the remote sandbox's round trip, which is what
a cloud sandbox costs. On a 2-core machine more workers than cores is honest only while that wait dominates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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

    return EvolveConfig(generations=args.generations, repeats=1, red_team="off", env=ENV, trial_concurrency=4,
                        lineage_concurrency=args.lineages, seed=1, max_drift=None)


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


def one(args, workers: int) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from envevo.evolve import evolve, make_engine, make_executor, start_lineages
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
        with tempfile.TemporaryDirectory() as tmp, LineageStore.open(Path(tmp) / "run") as store:
            async def main() -> tuple[float, float, int]:
                ids = await start_lineages(store, seeds(args.lineages), engine, cfg, checks=checks)  # on the driver
                executor = make_executor("ray", address=cluster.address)
                t0, c0 = time.monotonic(), time.process_time()
                await evolve(store, ids, engine, cfg, checks=checks, executor=executor)
                return time.monotonic() - t0, time.process_time() - c0, len(ids)

            wall, cpu, started = asyncio.run(main())
            assert store.check() == []
            generations = sum(v.generation > 0 for v in store.versions())
            assert generations == started * args.generations, f"{generations} generations committed"
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {"workers": workers, "wall_s": wall, "driver_cpu_s": cpu, "generations": generations}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--lineages", type=int, default=8)
    p.add_argument("--generations", type=int, default=1)
    p.add_argument("--latency", type=float, default=1.0, help="seconds per provider call of the fake remote env")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    os.environ["FAKE_REMOTE_LATENCY"] = str(args.latency)  # the workers inherit it from the nodes, and the path
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    rows = [one(args, int(n)) for n in args.workers.split(",")]
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
    print(f"fake remote env, {args.latency:.2f} s per provider call; {args.lineages} lineages × {args.generations} "
          "generations, red team off, 1 oracle run")
    print(f"{'workers':>7} {'wall s':>8} {'speedup':>8} {'efficiency':>10} {'driver CPU s/gen':>17}")
    for r in rows:
        print(f"{r['workers']:>7} {r['wall_s']:>8.1f} {r['speedup']:>8.2f} {r['efficiency']:>10.2f} "
              f"{r['driver_overhead_per_generation_s']:>17.3f}")
    print(f"a generation on one worker: {per_generation:.1f} s; the driver's overhead: {overhead:.3f} CPU s per "
          f"generation → one driver feeds about {summary['projected_max_workers_per_driver']} workers")


if __name__ == "__main__":
    main()
