"""The difficulty study, offline: evolve procedural seeds at low, high and max effort, roll out the simulated
agents on the lineages, and test the paper's claims: does the pass rate decline monotonically per agent, and does
D_T rank environments by measured failure (Spearman)? SIMULATION: the agents are skill profiles, not models.

    python benchmarks/difficulty_study.py                       # the small version: k=4, 15 generations
    python benchmarks/difficulty_study.py -k 8 --other-k 4 --single-step-seeds 2 --single-step-k 4 --work /tmp/study  # issue 16
    python benchmarks/difficulty_study.py --generations 3 --k 1 --every 1 --single-step-seeds 0   # a smoke run

Every stage resumes: re-running with the same --work skips seeds, generations and rollouts already stored.
What is rolled out (each version's rollouts are stored in its run, so `envevo analyze … RUN` reads them):
- the dense agent (default sim-medium) on every generation of every effort (Figure 3 and all-steps Table 1);
- the other agents on every --every-th generation and the last (Figure 3, consistency across agents);
- single-step direction runs: --single-step-seeds seeds evolved once per direction at high effort, seed and child
  rolled out by the dense agent (Table 1, single step).
Prints the Spearman correlation, whether each agent's pass rate declines monotonically per effort, and the
claims; writes WORK/report.html with the plots. Not a test: it takes tens of minutes and the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envevo.store import LineageStore  # noqa: E402

CLI = [sys.executable, "-m", "envevo.cli"]
RUN_SEED = 3  # the runs' random seed (direction order, engine choices)


def envevo(*args: str, log: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT)
    if log is not None:
        with log.open("a") as f:
            f.write(f"$ envevo {' '.join(args)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}\n")
    if proc.returncode != 0:
        raise SystemExit(f"envevo {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-1500:]}")
    return proc


def make_seeds(work: Path, n: int, length: int) -> list[Path]:
    seeds = []
    for i in range(n):
        d = work / "seeds" / f"s{i}"
        if not (d / "task.toml").is_file():
            envevo("seed", "procedural", str(d), "--length", str(length), "--seed", str(11 + i))
        seeds.append(d)
    return seeds


def evolve_all(jobs: list[tuple[Path, list[str]]], parallel: int, log: Path, checks: Sequence[str] = ()) -> None:
    """`envevo evolve` for every (run dir, extra args), a few processes at once (each resumes if stored)."""
    pending, running = list(jobs), []
    while pending or running:
        while pending and len(running) < parallel:
            run, args = pending.pop(0)
            f = (log.parent / f"evolve-{run.name}.log").open("w")
            running.append((run, subprocess.Popen([*CLI, "evolve", *args, "--run", str(run), "--seed", str(RUN_SEED),
                                                   "--resume", "--trial-concurrency", "2", *checks], stdout=f, stderr=f, cwd=ROOT)))
        time.sleep(2)
        for item in list(running):
            run, p = item
            if p.poll() is not None:
                running.remove(item)
                if p.returncode != 0:
                    raise SystemExit(f"evolve into {run} failed; see {log.parent / f'evolve-{run.name}.log'}")


def version_dirs(run: Path, generations: set[int] | None) -> list[str]:
    with LineageStore.open(run, create=False) as store:
        return [str(store.task_dir(v.task_hash)) for v in store.versions()
                if v.verified and (generations is None or v.generation in generations)]


def roll(run: Path, agent: str, k: int, generations: set[int] | None, concurrency: int, log: Path) -> None:
    dirs = version_dirs(run, generations)
    if dirs:
        t0 = time.time()
        envevo("rollout", *dirs, "--agent", agent, "-k", str(k), "--run", str(run),
               "--trial-concurrency", str(concurrency), "--json", log=log)
        print(f"  {run.name}: {agent} × {len(dirs)} versions × {k} in {time.time() - t0:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("runs/difficulty-study"), help="where seeds, runs and the report go")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per effort (lineages per effort)")
    ap.add_argument("--length", type=int, default=3, help="L of the procedural seeds")
    ap.add_argument("--generations", type=int, default=15)
    ap.add_argument("--efforts", default="low,high,max")
    ap.add_argument("--agents", default="sim-strong,sim-medium,sim-weak")
    ap.add_argument("--dense-agent", default="sim-medium", help="rolled out on every generation")
    ap.add_argument("--every", type=int, default=5, help="other agents: every N-th generation (and the last)")
    ap.add_argument("-k", "--k", type=int, default=4, help="rollouts per version and agent (the paper uses 8)")
    ap.add_argument("--other-k", type=int, default=None, help="rollouts per version for the agents other than the dense one (default: -k)")
    ap.add_argument("--single-step-seeds", type=int, default=1, help="seeds for the single-step direction runs (0: skip)")
    ap.add_argument("--single-step-k", type=int, default=None, help="rollouts per version in the single-step runs (default: -k)")
    ap.add_argument("--concurrency", type=int, default=3, help="trials at once during rollouts")
    ap.add_argument("--red-team", default="on", help="evolve's --red-team (on, off, sample:N): the exploits cost about 11 "
                    "trials per candidate and do not change a version's difficulty")
    ap.add_argument("--mutation", default="sample:4", help="evolve's --mutation (on, off, sample:N)")
    ap.add_argument("--json", action="store_true", help="print the analyses as JSON at the end")
    a = ap.parse_args()

    work = a.work.resolve()
    (work / "runs").mkdir(parents=True, exist_ok=True)
    log = work / "study.log"
    t0 = time.time()
    efforts = [e.strip() for e in a.efforts.split(",") if e.strip()]
    agents = [x.strip() for x in a.agents.split(",") if x.strip()]
    seeds = make_seeds(work, max(a.seeds, a.single_step_seeds), a.length)

    effort_runs = {e: work / "runs" / f"effort-{e}" for e in efforts}
    direction_runs = {d: work / "runs" / f"direction-{d}" for d in ("length", "scenario", "skill")} if a.single_step_seeds else {}
    jobs = [(run, [*map(str, seeds[:a.seeds]), "--effort", e, "--generations", str(a.generations)]) for e, run in effort_runs.items()]
    jobs += [(run, [*map(str, seeds[:a.single_step_seeds]), "--effort", "high", "--generations", "1", "--directions", d])
             for d, run in direction_runs.items()]
    print(f"evolving {len(jobs)} runs ({', '.join(r.name for r, _ in jobs)}) …", flush=True)
    evolve_all(jobs, parallel=3, log=log, checks=["--red-team", a.red_team, "--mutation", a.mutation])
    print(f"  evolved in {time.time() - t0:.0f} s", flush=True)

    sparse = set(range(0, a.generations + 1, max(1, a.every))) | {a.generations}
    t1 = time.time()
    for run in effort_runs.values():
        roll(run, a.dense_agent, a.k, None, a.concurrency, log)
    for run in direction_runs.values():
        roll(run, a.dense_agent, a.single_step_k or a.k, {0, 1}, a.concurrency, log)
    for agent in (x for x in agents if x != a.dense_agent):
        for run in effort_runs.values():
            roll(run, agent, a.other_k or a.k, sparse, a.concurrency, log)
    print(f"  rollouts in {time.time() - t1:.0f} s", flush=True)

    from envevo.analysis import analyze

    runs = [*effort_runs.values(), *direction_runs.values()]
    with ExitStack() as stack:
        study = analyze([stack.enter_context(LineageStore.open(r, create=False)) for r in effort_runs.values()])
        single = (analyze([stack.enter_context(LineageStore.open(r, create=False)) for r in direction_runs.values()])
                  if direction_runs else None)
    envevo("report", *map(str, runs), "--out", str(work / "report.html"))
    wall = time.time() - t0
    if a.json:
        print(json.dumps({"wall_s": round(wall), "study": study.model_dump(exclude={"rows"}),
                          "single_step": single.model_dump(include={"directions"}) if single else None}, indent=1))
        return
    print(f"\nSIMULATION — simulated agents ({', '.join(agents)}), k={a.k} ({a.dense_agent}), {a.other_k or a.k} "
          f"(others), {a.seeds} seed(s) × {len(efforts)} efforts, {a.generations} generations; wall {wall / 60:.1f} min")
    for v in study.validity:
        print(f"Spearman ρ(D_T, failure rate) {v.agent}: ρ={v.rho if v.rho is None else round(v.rho, 3)} "
              f"p={v.p_value if v.p_value is None else round(v.p_value, 4)} n={v.n} versions ({v.rollouts} rollouts); "
              f"ρ for L alone {v.rho_L if v.rho_L is None else round(v.rho_L, 3)}; against the exact expected failure "
              f"ρ={v.rho_exact if v.rho_exact is None else round(v.rho_exact, 3)}")
    print("pass rate per evaluated generation (monotone = never rises):")
    for t in study.trends:
        print(f"  {t.agent:>10} {t.effort or '-':>4}: {' '.join(f'{r:.2f}' for r in t.pass_rates)}  "
              f"monotone={'yes' if t.monotone else 'no'} rises={t.rises} zero_from="
              f"{'-' if t.zero_at is None else 'g' + str(t.zero_at)}  turns {t.turns_first or 0:.1f}→{t.turns_last or 0:.1f}")
        if t.exact_pass_rates is not None:  # the simulated profile's exact expectation: the curve without the noise
            print(f"  {'exact':>10} {t.effort or '-':>4}: {' '.join(f'{r:.2f}' for r in t.exact_pass_rates)}  "
                  f"monotone={'yes' if t.exact_monotone else 'no'} rises={t.exact_rises}")
    if single:
        for d in (d for d in single.directions if d.scope == "single step"):
            print(f"  single step {d.direction:>8} ({d.agent}, {d.steps} steps): Δpass {d.d_pass:+.3f} "
                  f"(exact {d.d_pass_exact if d.d_pass_exact is None else format(d.d_pass_exact, '+.3f')}) "
                  f"ΔD_T {d.d_DT if d.d_DT is None else format(d.d_DT, '+.1f')}  "
                  f"Δturns {d.d_turns if d.d_turns is None else round(d.d_turns, 1)}  total mutation {d.total_mutation:.2f}")
    for d in study.directions:
        if d.scope == "all steps":
            print(f"  all steps   {d.direction:>8} ({d.agent}, {d.steps} steps): Δpass {d.d_pass:+.3f} "
                  f"(exact {d.d_pass_exact if d.d_pass_exact is None else format(d.d_pass_exact, '+.3f')}) "
                  f"ΔD_T {d.d_DT if d.d_DT is None else format(d.d_DT, '+.1f')}  "
                  f"Δturns {d.d_turns if d.d_turns is None else round(d.d_turns, 1)}  total mutation {d.total_mutation:.2f}")
    for c in study.claims:
        print(f"[{ {True: 'holds', False: 'fails', None: 'untested'}[c.holds] }] {c.claim}: {c.evidence}")
    print(f"report: {work / 'report.html'}")


if __name__ == "__main__":
    main()
