"""Scheduler overhead at 10⁵ environments, next to the cost of one simulated GRPO step.

For every registered scheduler: microseconds per ``next(n)`` call and per ``observe`` call on a pool of
--envs environments (lineages of --generations + 1 versions, ξ from the synthetic generator, replicated),
driven for --steps steps of --batch groups, each group's rewards drawn at pass rate 0.5. Beside them: the
cost of one step of the curriculum simulator's synthetic GRPO learner on the same pool (success
probabilities, Bernoulli rollouts, update) — itself a floor far below a real GRPO step, which takes
seconds to minutes. Printed side by side, with the ratio scheduler / simulated step.

    python benchmarks/scheduler_overhead.py [--envs 100000] [--steps 200] [--batch 16] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envevo.schedule import EnvTable, make_scheduler, scheduler_names, synthetic_lineages  # noqa: E402
from envevo.schedule._learner import SyntheticLearner  # noqa: E402


def pool(n_envs: int, generations: int) -> list:
    """n_envs environments: 64 synthetic lineages replicated under fresh ids (ξ objects shared)."""
    template = synthetic_lineages(64, generations, seed=0)
    out = []
    k = 0
    while sum(len(lin) for lin in out) < n_envs:
        lin = template[k % len(template)]
        name = f"L{k:06d}"
        out.append([r.model_copy(update={"id": f"{name}__g{r.generation:02d}", "lineage": name}) for r in lin])
        k += 1
    extra = sum(len(lin) for lin in out) - n_envs
    if extra:
        out[-1] = out[-1][: len(out[-1]) - extra]
    return out


def bench_scheduler(spec: str, table: EnvTable, steps: int, batch: int, group: int) -> dict:
    t0 = time.perf_counter()
    s = make_scheduler(spec, table, seed=0, group_size=group)
    build = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    t_next, t_obs = [], []
    for _ in range(steps):
        a = time.perf_counter()
        ids = s.next(batch)
        b = time.perf_counter()
        t_next.append(b - a)
        rewards = (rng.random((batch, group)) < 0.5).astype(float).tolist()
        for e, r in zip(ids, rewards, strict=False):
            c = time.perf_counter()
            s.observe(e, r)
            t_obs.append(time.perf_counter() - c)
    a = time.perf_counter()
    s.state_dict()
    sd = time.perf_counter() - a
    return {
        "scheduler": spec,
        "build_s": build,
        "next_us": 1e6 * statistics.median(t_next),
        "next_us_mean": 1e6 * statistics.fmean(t_next),
        "observe_us": 1e6 * statistics.median(t_obs),
        "observe_us_mean": 1e6 * statistics.fmean(t_obs),
        "per_step_us": 1e6 * (sum(t_next) + sum(t_obs)) / steps,
        "state_dict_ms": 1e3 * sd,
    }


def bench_grpo_step(table: EnvTable, steps: int, batch: int, group: int) -> dict:
    learner = SyntheticLearner(table.records, seed=0)
    envs = learner.compile(table.records)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(steps):
        a = time.perf_counter()
        rows = rng.integers(len(table), size=batch)
        p = learner.success(envs, rows)
        draws = (rng.random((batch, group)) < p[:, None]).astype(float)
        learner.update(envs, rows.tolist(), draws.tolist(), batch_size=batch)
        times.append(time.perf_counter() - a)
    return {"grpo_step_us": 1e6 * statistics.median(times), "grpo_step_us_mean": 1e6 * statistics.fmean(times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=100_000)
    ap.add_argument("--generations", type=int, default=15)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--schedulers", default=",".join(scheduler_names() + ["el+patience", "el+frontier", "el+beta"]))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    table = EnvTable(pool(args.envs, args.generations))
    build = time.perf_counter() - t0
    grpo = bench_grpo_step(table, args.steps, args.batch, args.group)
    rows = [bench_scheduler(s, table, args.steps, args.batch, args.group) for s in args.schedulers.split(",")]
    for r in rows:
        r["ratio_to_sim_grpo_step"] = r["per_step_us"] / grpo["grpo_step_us_mean"]
    report = {"envs": len(table), "lineages": len(table.lineages), "steps": args.steps, "batch": args.batch,
              "group": args.group, "pool_build_s": build, **grpo, "schedulers": rows}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{len(table)} environments in {len(table.lineages)} lineages (pool built in {build:.1f} s); "
          f"{args.steps} steps × {args.batch} groups × {args.group} rollouts")
    print(f"one simulated GRPO step (synthetic learner, {args.batch} groups): "
          f"median {grpo['grpo_step_us']:.0f} µs, mean {grpo['grpo_step_us_mean']:.0f} µs")
    head = f"{'scheduler':<13}{'build s':>8}{'next µs':>10}{'(mean)':>9}{'observe µs':>12}{'(mean)':>9}" \
           f"{'µs/step':>10}{'÷ sim step':>11}{'state ms':>10}"
    print(head)
    for r in rows:
        print(f"{r['scheduler']:<13}{r['build_s']:>8.2f}{r['next_us']:>10.1f}{r['next_us_mean']:>9.1f}"
              f"{r['observe_us']:>12.1f}{r['observe_us_mean']:>9.1f}{r['per_step_us']:>10.0f}"
              f"{r['ratio_to_sim_grpo_step']:>10.2f}×{r['state_dict_ms']:>10.1f}")
    print("µs/step = one next(batch) plus batch observe calls; ÷ sim step = that over the simulated GRPO step.")


if __name__ == "__main__":
    main()
