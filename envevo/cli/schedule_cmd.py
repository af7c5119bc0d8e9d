"""`envevo schedule simulate|list`: compare curricula on evolved lineages in the GRPO curriculum simulator."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    INTERRUPTED_NO_SANDBOX,
    REMOVED_IN,
    deprecated_flag,
    err,
    out,
    print_json,
    progress,
    renamed,
    sub_app,
    user_errors,
)
from envevo.schedule import LearnerConfig, SimConfig

if TYPE_CHECKING:
    from envevo.schedule import SimulationResult

schedule_app = sub_app("Curriculum schedulers for RL on evolved lineages (EL and baselines), and a GRPO curriculum simulator.")

RUN_HELP = ("Train on this run's lineages (`envevo evolve --run RUN`); without it, a synthetic pool "
            "(--synthetic-lineages, --synthetic-generations, --pool-seed).")
SIM = SimConfig()  # the simulator's defaults, for the options that set them
SYNTHETIC_GENERATIONS = 15


def _pool(run: Path | None, n_lineages: int, generations: int, pool_seed: int):
    """(training lineages, held-out lineages or None, pool description)."""
    from envevo.errors import UserError
    from envevo.schedule import load_lineages, synthetic_lineages

    if run is None:
        train = synthetic_lineages(n_lineages, generations, seed=pool_seed)
        held = synthetic_lineages(max(2, n_lineages // 2), generations, seed=pool_seed, prefix="heldout")
        return train, held, {"source": "synthetic", "pool_seed": pool_seed,
                             "heldout": "separate synthetic lineages (same generator, other seeds)"}
    if not run.is_dir():
        raise UserError(f"--run {str(run)!r} is not a run directory")
    train = load_lineages(run)
    if len(train) >= 4:
        return train, None, {"source": str(run), "heldout": "every 4th lineage of the run, not trained on"}
    gens = max(r.generation for lin in train for r in lin)
    held = synthetic_lineages(8, max(gens, 1), seed=pool_seed, prefix="heldout")
    return train, held, {"source": str(run), "pool_seed": pool_seed,
                         "heldout": f"the run has {len(train)} lineage(s) (< 4): held out are 8 synthetic "
                                    "lineages over the procedural catalog"}


def _table(result: SimulationResult) -> Table:
    from envevo.schedule import SHORT_TITLES, TABLE_METRICS, fmt_pm, metric_title

    c = result.config
    t = Table(title=f"{result.label}\nmean±95% CI half-width over {c.seeds} seeds; {c.steps} steps of "
                    f"{c.batch_envs} groups × {c.group_size} rollouts",
              caption="partial: groups with 0 < passes < B (≤N: first N steps). held-out: mean success on "
                      "held-out environments after the last step. mastered: training envs at p ≤ τ before, > τ after.",
              title_justify="left", caption_justify="left")
    t.add_column("scheduler", style="bold", no_wrap=True)
    for m, _, _ in TABLE_METRICS:
        t.add_column(metric_title(SHORT_TITLES[m], result), overflow="fold", justify="right")
    for s in result.schedulers:
        t.add_row(escape(s), *[fmt_pm(result.summary[s][m], d) for m, _, d in TABLE_METRICS])
    return t


def _paired_table(result: SimulationResult) -> Table:
    from envevo.schedule import PAIRED_METRICS, SHORT_TITLES, fmt_pm, metric_title

    t = Table(title=f"SIMULATION — difference from {result.reference}, paired by seed: mean±95% CI half-width",
              title_justify="left")
    t.add_column("scheduler", style="bold", no_wrap=True)
    for m in PAIRED_METRICS:
        t.add_column(metric_title(SHORT_TITLES[m], result), overflow="fold", justify="right")
    for s, d in result.paired.items():
        t.add_row(f"{escape(s)} − {escape(result.reference)}",
                  *[fmt_pm(d[m], 0 if m == "rollouts_per_mastered" else 3) for m in PAIRED_METRICS])
    return t


def _old_pool_run(pool: str | None, flag: str) -> Path | None:
    """The run an old spelling of the pool named (`renamed` says it is deprecated); its 'synthetic' is now the
    default, no --run, so it is said here."""
    if pool == "synthetic":
        deprecated_flag(f"{flag} synthetic", "no --run (the synthetic pool is the default)", REMOVED_IN)
        return None
    return None if pool is None else Path(pool)


@schedule_app.command("simulate")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def simulate(
    run: Annotated[Path | None, o.run_option(RUN_HELP)] = None,
    old_pool: Annotated[str | None, o.old_spelling("--pool", "--run")] = None,
    old_lineages: Annotated[str | None, o.old_spelling("--lineages", "--run")] = None,
    schedulers: Annotated[str, typer.Option("--schedulers", help="Comma-separated scheduler specs; extensions with "
                                            "'+', e.g. el+patience,el+frontier,el+beta.")] = "el,random,plr,sfl,dapo,pools,coevo",
    steps: Annotated[int, typer.Option("--steps", min=1, help="GRPO steps per run.")] = SIM.steps,
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Runs per scheduler, each with its own seed (for "
                                         "the CIs).")] = SIM.seeds,
    old_seeds: Annotated[int | None, o.old_spelling("--seeds", "--repeats")] = None,
    seed: Annotated[int, typer.Option("--seed", help="First seed; runs use seed, seed+1, …")] = SIM.seed,
    batch_envs: Annotated[int, typer.Option("--batch-envs", min=1, help="Groups (environments) per step.")] = SIM.batch_envs,
    group_size: Annotated[int, typer.Option("--group-size", min=1, help="Rollouts per group (B).")] = SIM.group_size,
    tau: Annotated[float, typer.Option("--tau", min=0.0, max=0.999, help="EL passes an environment at > τ·B "
                                       "passes.")] = SIM.tau,
    lag: Annotated[int, typer.Option("--lag", min=0, help="Steps until a group is observed (asynchronous "
                                     "trainer).")] = SIM.lag,
    lr: Annotated[float, typer.Option("--lr", min=0.0, help="Learner's competence learning rate (familiarity: "
                                      "half).")] = SIM.learner.lr_skill,
    n_lineages: Annotated[int, typer.Option("--synthetic-lineages", min=1, help="Lineages of a synthetic pool.")] = 16,
    generations: Annotated[int, typer.Option("--synthetic-generations", min=0, help="Generations per lineage of a "
                                             "synthetic pool.")] = SYNTHETIC_GENERATIONS,
    old_generations: Annotated[int | None, o.old_spelling("--generations", "--synthetic-generations")] = None,
    pool_seed: Annotated[int, typer.Option("--pool-seed", help="Seed of the synthetic pool (and synthetic held-out "
                                           "set).")] = 0,
    out_dir: Annotated[Path | None, o.out_option("Write PNG plots, simulation.html and simulation.json here.")] = None,
    json_out: o.Json = False,
) -> None:
    """Run schedulers against a synthetic GRPO learner on a lineage pool. SIMULATION: no model is trained.

    --json prints one object (summary, paired, runs) instead of tables."""
    from envevo.schedule import parse_spec
    from envevo.schedule import simulate as run_simulation

    old = "schedule simulate --lineages (the pool)" if old_lineages is not None else "schedule simulate --pool"
    run = renamed(_old_pool_run(old_lineages or old_pool, old), run, old, "--run")
    seeds = renamed(old_seeds, repeats, "schedule simulate --seeds (runs per scheduler)", "--repeats", unset=SIM.seeds)
    generations = renamed(old_generations, generations, "schedule simulate --generations", "--synthetic-generations",
                          unset=SYNTHETIC_GENERATIONS)
    specs = [s.strip() for s in schedulers.split(",") if s.strip()]
    config = SimConfig(steps=steps, seeds=seeds, seed=seed, batch_envs=batch_envs, group_size=group_size, tau=tau,
                       lag=lag, early_steps=min(SIM.early_steps, steps), learner=LearnerConfig(lr_skill=lr, lr_scenario=lr / 2))
    for s in specs:
        parse_spec(s)
    train, held, info = _pool(run, n_lineages, generations, pool_seed)
    with progress("simulating (simulation)", total=len(specs) * seeds) as advance:
        result = run_simulation(train, specs, config, heldout=held, pool=info,
                                on_run=lambda r: advance(f"{r.scheduler} seed {r.seed}"))
    files: dict[str, str] = {}
    if out_dir is not None:
        from envevo.schedule import write_report  # matplotlib only when plots are wanted

        files = write_report(result, out_dir)
    if json_out:
        data = result.model_dump(mode="json")
        data["runs"] = [{k: r[k] for k in ("scheduler", "seed", "metrics", "progress")} for r in data["runs"]]
        data["files"] = files
        print_json(data)
        return
    _print_simulation(result, files)


def _print_simulation(result: SimulationResult, files: dict[str, str]) -> None:
    """The summary and paired tables, each scheduler's notes, the pool, and where the report was written."""
    out.print(_table(result))
    if result.paired:
        out.print(_paired_table(result))
    for spec, notes in result.notes.items():
        for n in notes:
            out.print(f"[yellow]note[/] {escape(spec)}: {escape(n)}")
    out.print(f"pool: {escape(str(result.pool))}", soft_wrap=True, highlight=False)
    if files:
        out.print(f"plots and report (simulation): {escape(files['simulation.html'])}", soft_wrap=True)


class _SchedulerRow(TypedDict):
    name: str
    summary: str
    extensions: list[str]


@schedule_app.command("list")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def list_schedulers(json_out: o.Json = False) -> None:
    """The schedulers available to `simulate` and to trainers, with their opt-in extensions."""
    from envevo.schedule import scheduler_class, scheduler_names, scheduler_summary

    rows: list[_SchedulerRow] = [
        {"name": n, "summary": scheduler_summary(n), "extensions": list(scheduler_class(n).EXTENSIONS)}
        for n in scheduler_names()]
    if json_out:
        print_json(rows)
        return
    t = Table(title="schedulers")
    t.add_column("name", style="bold")
    t.add_column("what it does")
    t.add_column("extensions (name+ext)")
    for r in rows:
        t.add_row(r["name"], escape(r["summary"]), ", ".join(r["extensions"]) or "-")
    out.print(t)
    err.print("compose extensions with '+': e.g. el+patience+frontier")
