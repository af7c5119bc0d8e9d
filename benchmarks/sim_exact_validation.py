"""The simulated agents' exact expected pass rate against sampled rollouts in real sandboxes. SIMULATION.

Evolves procedural seeds (or takes runs already evolved), rolls out each simulated profile k times on every
verified version, and prints, per profile and pooled, on how many versions the sampled pass count falls inside the
exact formula's 95% binomial interval (the target is at least 95% of them), the mean |sampled − exact| turns, and
the versions where the sampled order strong ≥ medium ≥ weak is broken beyond sampling noise.

    python benchmarks/sim_exact_validation.py --work /tmp/exact -k 16                # evolve 2 seeds, 6 generations
    python benchmarks/sim_exact_validation.py --runs /tmp/study/runs/effort-high -k 8 # versions of existing runs
    python benchmarks/sim_exact_validation.py --runs /tmp/study/runs/effort-* --stored  # the rollouts they hold

Every stage resumes (evolution and rollouts are stored). Not a test: tens of minutes on a shared machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.difficulty_study import envevo, evolve_all, make_seeds  # noqa: E402
from envevo.analysis import collect  # noqa: E402
from envevo.rollout import binomial_interval  # noqa: E402
from envevo.store import LineageStore  # noqa: E402

AGENTS = ("sim-strong", "sim-medium", "sim-weak")


def _inside(passes: int, p: float, k: int) -> bool:
    lo, hi = binomial_interval(p, k)
    return lo <= passes <= hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("runs/exact-validation"))
    ap.add_argument("--runs", type=Path, nargs="*", help="evolved runs to use instead of evolving seeds")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--generations", type=int, default=6)
    ap.add_argument("--effort", default="high")
    ap.add_argument("-k", "--k", type=int, default=16)
    ap.add_argument("--agents", default=",".join(AGENTS), help="profiles to roll out (the order check needs all three)")
    ap.add_argument("--concurrency", type=int, default=3)
    ap.add_argument("--stored", action="store_true", help="roll out nothing: check the rollouts the runs already "
                                                          "hold, whatever their k (e.g. a difficulty study's)")
    a = ap.parse_args()
    t0 = time.time()
    work = a.work.resolve()
    runs = [r.resolve() for r in a.runs or []]
    if not runs:
        (work / "runs").mkdir(parents=True, exist_ok=True)
        seeds = make_seeds(work, a.seeds, 3)
        runs = [work / "runs" / f"effort-{a.effort}"]
        evolve_all([(runs[0], [*map(str, seeds), "--effort", a.effort, "--generations", str(a.generations)])],
                   parallel=1, log=work / "validation.log")
    agents = [x.strip() for x in a.agents.split(",") if x.strip()]
    for run in runs if not a.stored else ():
        for agent in agents:
            envevo("rollout", str(run), "--agent", agent, "-k", str(a.k), "--trial-concurrency", str(a.concurrency), "--json")
    with ExitStack() as stack:
        stores = [stack.enter_context(LineageStore.open(r, create=False)) for r in runs]
        rows = [r for r in collect(stores)
                if r.agent in agents and r.exact_pass_rate is not None and (r.n == a.k or a.stored and r.n > 0)]
        passing, harmless = harmless_passes(stores, agents)
    ks = sorted({r.n for r in rows})
    print(f"SIMULATION — exact vs sampled, k={','.join(map(str, ks))}, {len({r.task_hash for r in rows})} versions, "
          f"{len(rows)} (version, profile) cells, "
          f"wall {(time.time() - t0) / 60:.1f} min")
    inside_all = 0
    for agent in (*agents, None):
        rs = [r for r in rows if agent is None or r.agent == agent]
        inside = [r for r in rs if _inside(r.passes, r.exact_pass_rate, r.n)]
        turns = [abs(r.mean_turns - r.exact_turns) for r in rs if r.mean_turns is not None and r.exact_turns]
        if agent is None:
            inside_all = len(inside)
        print(f"  {agent or 'pooled':>10}: inside the 95% interval on {len(inside)}/{len(rs)} "
              f"({len(inside) / max(1, len(rs)):.0%}); mean |turns − exact| {sum(turns) / max(1, len(turns)):.2f}; "
              f"mean sampled {sum(r.pass_rate for r in rs) / max(1, len(rs)):.3f} "
              f"exact {sum(r.exact_pass_rate for r in rs) / max(1, len(rs)):.3f}")
    by_version: dict[str, dict[str, tuple[float, int]]] = {}
    for r in rows:
        by_version.setdefault(r.task_hash, {})[r.agent] = (r.pass_rate, r.n)

    def below(x: tuple[float, int], y: tuple[float, int]) -> bool:  # x under y beyond sampling noise
        se = (x[0] * (1 - x[0]) / x[1] + y[0] * (1 - y[0]) / y[1]) ** 0.5
        return x[0] < y[0] - 1.96 * se - 1e-9

    broken = [h for h, rates in by_version.items() if len(rates) == 3 and any(
        below(rates[x], rates[y]) for x, y in zip(AGENTS, AGENTS[1:], strict=False))]
    print(f"  sampled order strong ≥ medium ≥ weak broken beyond noise on {len(broken)}/"
          f"{sum(len(r) == 3 for r in by_version.values())} versions with all three profiles")
    if rows and inside_all / len(rows) < 0.95:
        print("  below the 95% target")
    blocks = sorted({b for bs in harmless for b in bs})
    print(f"  harmless wrong variants: {len(harmless)} of {passing} passing rollouts passed with a step whose last "
          f"attempt was its wrong variant" + (f", in {len(blocks)} (scenario, skill) blocks: "
                                              + ", ".join(f"{sc}/{sk}" for sc, sk in blocks) if blocks else ""))


def harmless_passes(stores, agents) -> tuple[int, list[list[tuple[str, str]]]]:
    """(passing simulated rollouts, and per one that passed with a step ending on its wrong variant, those steps'
    (scenario, skill) blocks): a check that cannot tell the plausible mistake from the skill on that data."""
    from envevo.catalog import chain_from_task
    from envevo.errors import TaskError
    from envevo.rollout import read_episodes
    from envevo.task import load_task

    passing, harmless = 0, []
    for store in stores:
        by_hash: dict[str, list] = {}
        for r in store.rollouts():
            if r.agent in agents:
                by_hash.setdefault(r.task_hash, []).append(r)
        for task_hash, rs in by_hash.items():
            try:
                steps = chain_from_task(load_task(store.task_dir(task_hash))).steps
            except (TaskError, OSError):
                continue
            for ep in read_episodes(r.trial_dir for r in rs):
                if not ep.passed:
                    continue
                passing += 1
                wrong = [(steps[t].scenario, steps[t].skill) for t, step in enumerate(ep.steps)
                         if t < len(steps) and step.attempts and step.attempts[-1] == "wrong"]
                if wrong:
                    harmless.append(wrong)
    return passing, harmless


if __name__ == "__main__":
    main()
