"""`envevo evolve`: evolve seeds into lineages of harder, verified generations, stored in a run."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    check_output_dir,
    err,
    note,
    out,
    plain,
    print_json,
    renamed,
    user_errors,
)
from envevo.cli._groups import EngineModelOptions, SandboxOptions, ScaleOptions, VerificationOptions, built, grouped
from envevo.errors import ExitCode, UserError
from envevo.evolve import EvolveConfig, Stage
from envevo.trace import Direction, Effort

D = EvolveConfig()  # every option's default, as the run's settings have it
LLM = o.LLM
# Plain re-running would refuse the run dir (it exists); --resume continues from the last committed generations.
INTERRUPTED = ("interrupted: sandboxes were torn down and committed generations kept; run the same command with "
               "--resume to continue")


def given_on_command_line(ctx: typer.Context | None) -> set[str]:
    """The parameters the user typed (not defaults): a resume changes only those of RESUME_IF_GIVEN."""
    if ctx is None:  # called as a function, not as the command
        return set()
    return {name for name in ctx.params if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"}


def parse_directions(text: str) -> list[Direction]:
    names = [d.strip() for d in text.split(",") if d.strip()]
    bad = [d for d in names if d not in {x.value for x in Direction}]
    if bad or not names:
        raise UserError(f"--directions {text!r}: use a comma-separated subset of length, scenario, skill")
    return [Direction(d) for d in dict.fromkeys(names)]


def parse_max_drift(text: str) -> float | None:
    """--max-drift: a bound on 1 − instruction similarity to the seed, or off."""
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 2:
        raise UserError(f"--max-drift {text!r}: use a number from 0 to 2 (1 − cosine similarity to the seed), or off")
    return value


@dataclass
class RunOptions:
    """The run's search and load: what `EvolveConfig` stores (with the verification options)."""

    engine_name: Annotated[str, typer.Option("--engine", help="procedural (offline) or llm.")] = D.engine
    generations: o.Generations = D.generations
    effort: Annotated[Effort, typer.Option("--effort", help="low: one pair; high: one contiguous span; "
                                           "max: anything.")] = D.effort
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the run (direction order, every engine "
                                      "choice).")] = D.seed
    directions: Annotated[str, typer.Option("--directions", help="Comma-separated directions tried each generation "
                                            "(one alone isolates a lever).")] = ",".join(D.directions)
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run stored in --run, from each lineage's last "
                                         "committed generation; a terminated lineage stays as stored. The stored "
                                         "settings stand; --red-team, --mutation, --model-mutants, --repeats, "
                                         "--max-drift, --env, --plan-budget and --env-budget given again with another "
                                         "value apply from "
                                         "the resume on (a line says so); engine, effort, seed, directions and models "
                                         "must match.")
                      ] = False
    retry_skipped: Annotated[bool, typer.Option("--retry-skipped", help="With --resume: try the seeds the run skipped "
                                                "(no ξ extracted, or the seed gate failed) again, with the current "
                                                "settings.")] = False
    lineage_concurrency: o.LineageConcurrency = D.lineage_concurrency
    old_lineages: Annotated[int | None, o.old_spelling("--lineages", "--lineage-concurrency")] = None
    # evolve's --concurrency meant lineages at once (until 0.3), not trials as on the other commands: read so
    old_concurrency: Annotated[int | None, o.old_spelling("--concurrency", "--lineage-concurrency")] = None

    def settings(self, sandbox: SandboxOptions, verification: VerificationOptions, harden: bool, plan_budget: int,
                 env_budget: int, max_drift: str) -> EvolveConfig:
        """The run's settings, as the run stores them (`api.evolve` adds the image map, the sandbox's with the
        project file's)."""
        lineages = renamed(self.old_lineages, self.lineage_concurrency, "evolve --lineages", "--lineage-concurrency",
                           unset=D.lineage_concurrency)
        lineages = renamed(self.old_concurrency, lineages, "evolve --concurrency (lineages at once)",
                           "--lineage-concurrency", unset=D.lineage_concurrency)
        v = verification.verification_config()
        return built(EvolveConfig, engine=self.engine_name, generations=self.generations, effort=self.effort,
                     seed=self.seed, directions=parse_directions(self.directions), plan_budget=plan_budget,
                     env_budget=env_budget, env=sandbox.env, repeats=v.repeats, red_team=v.red_team, harden=harden,
                     mutation=v.mutation, model_mutants=v.model_mutants, trial_concurrency=sandbox.trial_concurrency,
                     lineage_concurrency=lineages, max_drift=parse_max_drift(max_drift))


@dataclass
class Targeting:
    """Weakness targeting (with the old spellings evolve still reads)."""

    old_llm_config: Annotated[Path | None, o.old_spelling("--llm-config", "--config")] = None
    target_weakness: o.TargetWeakness = None
    target_agent: o.TargetAgent = None
    old_agent: Annotated[str | None, o.old_spelling("--agent", "--by-agent")] = None


@user_errors(interrupted=INTERRUPTED)
@grouped
def evolve(
    seeds: Annotated[list[Path], typer.Argument(help="Seed task dirs (e.g. made by `envevo seed procedural`).")],
    *,
    run_dir: Annotated[Path | None, o.run_option("The run dir to write (or with --resume, to continue): it holds "
                                                 "the lineage store; required.")] = None,
    old_out: Annotated[Path | None, o.old_spelling("--out", "--run")] = None,
    run: RunOptions,
    sandbox: SandboxOptions,
    verification: VerificationOptions,
    harden: Annotated[bool, typer.Option("--harden/--no-harden", help="A seed that only the red team failed is "
                                         "hardened (tests to a separate verifier, proved; docs/trust.md#harden) and "
                                         "evolves from the hardened copy, stored as generation 0 with its provenance. "
                                         "--no-harden rejects it instead.", rich_help_panel=o.SANDBOX)] = True,
    plan_budget: Annotated[int, typer.Option("--plan-budget", min=1, help="Proposer→Reviewer rounds per "
                                             "direction.")] = D.plan_budget,
    env_budget: Annotated[int, typer.Option("--env-budget", min=1, help="Modifier→verifier rounds per "
                                            "plan.")] = D.env_budget,
    json_out: o.Json = False,
    model: EngineModelOptions,
    max_drift: Annotated[str, typer.Option("--max-drift", help="Reject a candidate whose instruction drifted more than "
                                           "this from the seed: 1 − cosine similarity of the whole instruction to the "
                                           "seed's (all-MiniLM-L6-v2); the reason goes back to the Modifier. off: no "
                                           "bound. See docs/drift.md.")] = str(D.max_drift),
    scale: ScaleOptions,
    targeting: Targeting,
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it: which options were typed
) -> None:
    """Evolve each seed into a lineage of harder, verified generations."""
    from envevo import api
    from envevo.cli.difficulty_cmd import choose_estimator

    run_dir = renamed(old_out, run_dir, "evolve --out", "--run")
    sandbox.project = renamed(targeting.old_llm_config, sandbox.project, "--llm-config", "--config")
    target_agent = renamed(targeting.old_agent, targeting.target_agent, "evolve --agent (whose weakness)", "--by-agent")
    if run_dir is None:
        raise UserError("evolve writes its lineages to a run: give its dir with --run RUN")
    check_output_dir(run_dir, "--run")
    settings = run.settings(sandbox, verification, harden, plan_budget, env_budget, max_drift)
    config = api.EvolveRun(
        seeds=tuple(seeds), run_dir=run_dir, settings=settings, resume=run.resume, retry_skipped=run.retry_skipped,
        explicit=frozenset(given_on_command_line(ctx)), model=model.model_config(sandbox.project),
        scale=scale.scale_config(), sandbox=sandbox.sandbox_config(),
        rubrics=tuple(model.rubric), learn_rubric=verification.learn_rubric,
        target_weakness=targeting.target_weakness, target_agent=target_agent)
    # p_T of δ: the run's own, as `envevo difficulty RUN --weakness` takes it (its notes go to stderr)
    weak_p = choose_estimator(targeting.target_weakness, None) if targeting.target_weakness else None
    with _Bars(settings.generations) as bars:
        result = asyncio.run(api.evolve(config, weakness_p=weak_p, on_event=bars.on_event, on_started=bars.started,
                                        notify=note))
    _print_summary(result, run_dir, json_out)
    if result.all_seeds_rejected:
        err.print("every seed was rejected at the seed gate (or its ξ could not be read): nothing evolved; the reasons "
                  "are above", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(ExitCode.ALL_SEEDS_REJECTED)


class _Bars:
    """A bar per lineage on stderr (plain lines when stderr is not a terminal: nohup, CI)."""

    def __init__(self, generations: int) -> None:
        self.lines = plain()
        self.bar = Progress(TextColumn("{task.fields[lineage]}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("{task.fields[worker]}"),
                            TextColumn("{task.fields[stage]}", markup=False), console=err,
                            disable=self.lines is not None)
        self.bars: dict[str, TaskID] = {}
        self.total = generations

    def __enter__(self) -> _Bars:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.bar.__exit__(None, None, None)
        finally:
            if self.lines is not None:
                self.lines.flush()

    def bar_of(self, lineage: str, done: int = 0) -> TaskID:
        if lineage not in self.bars:
            self.bars[lineage] = self.bar.add_task("", total=self.total, completed=done, lineage=lineage, stage="",
                                                   worker="driver")
        return self.bars[lineage]

    def started(self, latest: dict[str, int], generations: int) -> None:
        self.total = generations
        for lid, done in latest.items():
            self.bar.update(self.bar_of(lid), total=generations, completed=done)

    def on_event(self, e) -> None:
        if e.stage is Stage.WORKER:  # the Ray executor: which worker runs the lineage's generation now
            self.bar.update(self.bar_of(e.lineage), worker=e.detail)
            return
        said = e.stage in (Stage.JUDGED, Stage.KEPT, Stage.WEAK) or (e.stage is Stage.TERMINATED and e.generation == 0)
        if said:  # a seed's verdict, or a lineage a resume leaves as it ended: said once
            # markup off: reasons name settings in brackets ([llm.roles.proposer]) that rich would swallow
            self.bar.console.print(f"{e.lineage}: {e.detail}", markup=False, highlight=False, soft_wrap=True)
        stage = f"g{e.generation:02d} {e.stage}" + (f": {e.detail}" if e.detail else "")
        self.bar.update(self.bar_of(e.lineage), stage=stage,
                        **({"completed": e.generation} if e.stage in (Stage.ACCEPTED, Stage.KEPT) else {}))
        if self.lines is not None and not said:
            self.lines.update(e.lineage, f"{e.lineage} {stage}")


def _print_summary(result, run_dir: Path, json_out: bool) -> None:
    summary = [s.model_dump() for s in result.lineages]
    if json_out:
        print_json({"run": str(result.run_dir), "lineages": summary})
        return
    table = Table(title=f"envevo evolve → {run_dir}")
    for col in ("lineage", "status", "generations", "L", "D_T first → last", "reason"):
        table.add_column(col, overflow="fold")
    for s in summary:
        dts = [d for d in s["D_T"] if d is not None]
        table.add_row(s["lineage"], s["status"], str(s["generations"]), " ".join("-" if n is None else str(n) for n in s["L"]),
                      f"{dts[0]:.2f} → {dts[-1]:.2f}" if dts else "-", s["reason"] or "")
    out.print(table)
    err.print(f"next: envevo lineage show {run_dir} · envevo report {run_dir}")
