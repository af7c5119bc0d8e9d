"""`envevo evolve`: evolve seeds into lineages of harder, verified generations, stored in a run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    REMOVED_IN,
    check_output_dir,
    check_red_team,
    deprecated_flag,
    err,
    is_run_dir,
    out,
    pass_env,
    plain,
    preflight,
    print_json,
    renamed,
    user_errors,
)
from envevo.cli._verifier_model import verification_model
from envevo.cli.verify_cmd import check_mutation
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


@user_errors(interrupted=INTERRUPTED)
def evolve(
    seeds: Annotated[list[Path], typer.Argument(help="Seed task dirs (e.g. made by `envevo seed procedural`).")],
    run_dir: Annotated[Path | None, o.run_option("The run dir to write (or with --resume, to continue): it holds "
                                                 "the lineage store; required.")] = None,
    old_out: Annotated[Path | None, o.old_spelling("--out", "--run")] = None,
    engine_name: Annotated[str, typer.Option("--engine", help="procedural (offline) or llm.")] = D.engine,
    generations: o.Generations = D.generations,
    effort: Annotated[Effort, typer.Option("--effort", help="low: one pair; high: one contiguous span; "
                                           "max: anything.")] = D.effort,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the run (direction order, every engine "
                                      "choice).")] = D.seed,
    directions: Annotated[str, typer.Option("--directions", help="Comma-separated directions tried each generation "
                                            "(one alone isolates a lever).")] = ",".join(D.directions),
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run stored in --run, from each lineage's last "
                                         "committed generation; a terminated lineage stays as stored. The stored "
                                         "settings stand; --red-team, --mutation, --model-mutants, --repeats, "
                                         "--max-drift, --env, --plan-budget and --env-budget given again with another "
                                         "value apply from "
                                         "the resume on (a line says so); engine, effort, seed, directions and models "
                                         "must match.")
                      ] = False,
    retry_skipped: Annotated[bool, typer.Option("--retry-skipped", help="With --resume: try the seeds the run skipped "
                                                "(no ξ extracted, or the seed gate failed) again, with the current "
                                                "settings.")] = False,
    lineages: o.Lineages = D.lineage_concurrency,
    old_concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, hidden=True,
                                                        help="Deprecated here: use --lineages.")] = None,
    trial_concurrency: Annotated[int, typer.Option("--trial-concurrency", min=1, rich_help_panel=o.SANDBOX,
                                                   help="Sandbox trials at once, across lineages.")] = o.CONCURRENCY,
    env: o.Env = o.ENV,
    repeats: o.Repeats = o.REPEATS,
    red_team: o.RedTeam = o.RED_TEAM,
    harden: Annotated[bool, typer.Option("--harden/--no-harden", help="A seed that only the red team failed is "
                                         "hardened (tests to a separate verifier, proved; docs/trust.md#harden) and "
                                         "evolves from the hardened copy, stored as generation 0 with its provenance. "
                                         "--no-harden rejects it instead.", rich_help_panel=o.SANDBOX)] = True,
    learn_rubric: o.LearnRubric = None,
    mutation: o.Mutation = o.MUTATION,
    plan_budget: Annotated[int, typer.Option("--plan-budget", min=1, help="Proposer→Reviewer rounds per "
                                             "direction.")] = D.plan_budget,
    env_budget: Annotated[int, typer.Option("--env-budget", min=1, help="Modifier→verifier rounds per "
                                            "plan.")] = D.env_budget,
    json_out: o.Json = False,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    role_model: o.RoleModel = [],  # noqa: B006 (typer copies list defaults)
    config: o.ConfigFile = None,
    pass_env_names: o.PassEnv = [],  # noqa: B006 (typer copies list defaults)
    old_llm_config: Annotated[Path | None, o.old_spelling("--llm-config", "--config")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", rich_help_panel=LLM, help="USD per lineage; "
                                                   "reaching it ends the lineage as budget_exhausted (resumable).")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", rich_help_panel=LLM,
                                                   help="Tokens per lineage, same behaviour. The calls "
                                                   "outside lineages (the seeds' extraction and attacks) are one more "
                                                   "budget under the same caps.")] = None,
    model_mutants: o.ModelMutants = D.model_mutants,
    rubric: Annotated[list[Path], typer.Option("--rubric", rich_help_panel=LLM,
                                               help="An extra rubric TOML for the judge; repeatable.")] = [],  # noqa: B006
    price: o.PriceOption = [],  # noqa: B006
    record: o.RecordDir = None,
    replay: o.ReplayDir = None,
    max_drift: Annotated[str, typer.Option("--max-drift", help="Reject a candidate whose instruction drifted more than "
                                           "this from the seed: 1 − cosine similarity of the whole instruction to the "
                                           "seed's (all-MiniLM-L6-v2); the reason goes back to the Modifier. off: no "
                                           "bound. See docs/drift.md.")] = str(D.max_drift),
    executor_name: o.ExecutorName = o.EXECUTOR,
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
    target_weakness: o.TargetWeakness = None,
    target_agent: o.TargetAgent = None,
    old_agent: Annotated[str | None, o.old_spelling("--agent", "--by-agent")] = None,
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it: which options were typed
) -> None:
    """Evolve each seed into a lineage of harder, verified generations."""
    from envevo.evolve import (
        Capability,
        engine_capabilities,
        is_skipped,
        is_targetable,
        make_engine,
        open_run,
        run_verifiers,
        scale_out,
        start_lineages,
        uses_models,
    )
    from envevo.evolve import evolve as run_evolve
    from envevo.llm import settings_with_options
    from envevo.task import first_duplicate, load_task

    if old_concurrency is not None:
        deprecated_flag("evolve --concurrency for lineages at once", "--lineages (from then on --concurrency means "
                        "trials, as on the other commands)", REMOVED_IN)
        lineages = old_concurrency if lineages == D.lineage_concurrency else lineages
    run_dir = renamed(old_out, run_dir, "evolve --out", "--run")
    config = renamed(old_llm_config, config, "--llm-config", "--config")
    target_agent = renamed(old_agent, target_agent, "evolve --agent (whose weakness)", "--by-agent")
    if run_dir is None:
        raise UserError("evolve writes its lineages to a run: give its dir with --run RUN")
    if retry_skipped and not resume:
        raise UserError("--retry-skipped reopens the skipped seeds of a stored run: add --resume")
    if resume and not is_run_dir(run_dir):  # a typo must not start a new run of every generation
        raise UserError(f"--resume: {run_dir} holds no run (no store.sqlite); check the path, or drop --resume to "
                        "start a new run there")
    check_output_dir(run_dir, "--run")
    check_red_team(red_team)
    check_mutation(mutation)
    pass_env(pass_env_names, config)
    preflight(env)
    executor = scale_out(executor_name, ray_address, max_sandboxes, start_rate)
    capabilities = engine_capabilities(engine_name)
    settings = settings_with_options(config, model, base_url, api_key_env, role_model, max_cost, max_tokens,
                                     price, record, replay) if Capability.USES_LLM in capabilities else None
    engine, checks = make_engine(engine_name, settings, env=env, rubric_files=rubric)
    weak_p = None  # the p_T the δ tables are computed under: an llm one spends tokens, stored with the run's usage
    if target_weakness is not None or target_agent is not None:
        from envevo.cli.difficulty_cmd import choose_estimator
        from envevo.rollout import weakness_target

        if target_weakness is None:
            raise UserError("--by-agent names whose weakness to target; give the run of its rollouts with "
                            "--target-weakness RUN")
        if not is_targetable(engine):
            raise UserError("--target-weakness steers the procedural engine only; use --engine procedural or drop it")
        # p_T: the run's own, as `envevo difficulty RUN --weakness` takes it (its notes go to stderr)
        weak_p = choose_estimator(target_weakness, None)
        engine.target = weakness_target(target_weakness, target_agent, weak_p)
    if uses_models(engine):
        asyncio.run(engine.preflight())  # a missing key or a dead endpoint: one line, before any work
    given = EvolveConfig(
        engine=engine_name, generations=generations, effort=effort, seed=seed, directions=parse_directions(directions),
        plan_budget=plan_budget, env_budget=env_budget, env=env, repeats=repeats, red_team=red_team, harden=harden, mutation=mutation,
        model_mutants=model_mutants, trial_concurrency=trial_concurrency, lineage_concurrency=lineages,
        max_drift=parse_max_drift(max_drift),
        # Recorded so that --resume refuses to continue a lineage with different models.
        models={role: spec.label for role, spec in engine.runtime.specs().items()} if uses_models(engine) else {},
        weakness_target=engine.target.model_dump(mode="json") if is_targetable(engine) and engine.target else None,
    )
    tasks = [load_task(s) for s in seeds]
    names = [p.resolve().name for p in seeds]
    if first_duplicate(names):
        raise UserError("two seeds share a folder name; lineages are named after it, so rename one")
    # Refuse seeds the engine cannot read before anything is written (a model's extraction that fails skips its
    # seed instead, in start_lineages).
    for task in tasks if Capability.OFFLINE_EXTRACTION in engine.capabilities else ():
        asyncio.run(engine.extract_trace(task))
    store, cfg = open_run(run_dir, given, resume=resume, explicit=given_on_command_line(ctx),
                          notify=lambda line: err.print(line, markup=False, highlight=False))
    for rec in getattr(getattr(weak_p, "meter", None), "records", ()):  # outside lineages: `lineage show` lists it
        store.add_usage(rec.role, input_tokens=rec.input_tokens, output_tokens=rec.output_tokens, model=rec.model,
                        cost_usd=rec.cost_usd, estimated=rec.estimated)
    if cfg.weakness_target is not None and is_targetable(engine):  # on a resume, the δ the run started with
        from envevo.evolve.engines.procedural import WeaknessTarget

        engine.target = WeaknessTarget.model_validate(cfg.weakness_target)
        err.print(f"targeting the weakness of {engine.target.agent}: "
                  + (", ".join(f"{k} δ={v:.2f}" for k, v in engine.target.weakest()) or "no δ > 0 yet (untargeted)"),
                  markup=False, highlight=False)
    lent = None  # an engine without a model still lends one to the hacker and --model-mutants: --config's/--model's
    if uses_models(engine):
        engine.attach_store(store)  # usage rows per role; budgets resume from what the store recorded
    else:
        lent = verification_model(config, model, base_url, api_key_env, red_team=cfg.red_team, mutation=cfg.mutation,
                                  model_mutants=cfg.model_mutants)
        if lent is not None:
            if max_tokens is not None:  # its calls are all outside lineages: one budget under the lineages' cap
                lent.meter.max_tokens = max_tokens
            from envevo.llm import attach_store

            attach_store(lent.meter, store)  # its calls are stored with the run's usage (outside lineages)

    lines = plain()  # stderr not a terminal (nohup, CI): plain lines, as the live bar would show nothing
    bar = Progress(TextColumn("{task.fields[lineage]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.fields[worker]}"), TextColumn("{task.fields[stage]}", markup=False), console=err,
                   disable=lines is not None)
    bars: dict[str, TaskID] = {}

    def bar_of(lineage: str, done: int = 0) -> TaskID:
        if lineage not in bars:
            bars[lineage] = bar.add_task("", total=cfg.generations, completed=done, lineage=lineage, stage="",
                                         worker="driver")
        return bars[lineage]

    def on_event(e):
        if e.stage is Stage.WORKER:  # the Ray executor: which worker runs the lineage's generation now
            bar.update(bar_of(e.lineage), worker=e.detail)
            return
        said = e.stage in (Stage.JUDGED, Stage.KEPT, Stage.WEAK) or (e.stage is Stage.TERMINATED and e.generation == 0)
        if said:  # a seed's verdict, or a lineage a resume leaves as it ended: said once
            # markup off: reasons name settings in brackets ([llm.roles.proposer]) that rich would swallow
            bar.console.print(f"{e.lineage}: {e.detail}", markup=False, highlight=False, soft_wrap=True)
        stage = f"g{e.generation:02d} {e.stage}" + (f": {e.detail}" if e.detail else "")
        bar.update(bar_of(e.lineage), stage=stage,
                   **({"completed": e.generation} if e.stage in (Stage.ACCEPTED, Stage.KEPT) else {}))
        if lines is not None and not said:
            lines.update(e.lineage, f"{e.lineage} {stage}")

    # The red team's LLM hacker on the run's model (metered with it), learning into --learn-rubric only when given.
    verifiers = run_verifiers(engine, cfg, learn_rubric, lent)

    async def main() -> None:
        # One event loop for the whole run: Harbor keeps loop-bound locks at module level.
        ids = await start_lineages(store, list(zip(names, tasks, strict=True)), engine, cfg, checks=checks, on_event=on_event,
                                   retry_skipped=retry_skipped, verifiers=verifiers)
        for lid in ids:
            bar.update(bar_of(lid), completed=store.lineage(lid).latest_generation)
        await run_evolve(store, ids, engine, cfg, checks=checks, on_event=on_event, executor=executor,
                         verifiers=verifiers)

    try:
        try:
            with bar:
                asyncio.run(main())
        finally:
            if lines is not None:
                lines.flush()
        _print_summary(store, run_dir, json_out)
        seeded = [lin for lin in store.lineages() if lin.seed_name in names]  # this command's seeds' lineages
    finally:
        store.close()  # lets go of the run dir at once, also when called in-process (tests)
    if seeded and all(is_skipped(lin) for lin in seeded):
        err.print("every seed was rejected at the seed gate (or its ξ could not be read): nothing evolved; the reasons "
                  "are above", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(ExitCode.ALL_SEEDS_REJECTED)


def _print_summary(store, run_dir: Path, json_out: bool) -> None:
    summary = []
    for lin in store.lineages():
        versions = store.versions(lin.id)
        summary.append({
            "lineage": lin.id, "status": str(lin.status), "reason": lin.reason, "generations": lin.latest_generation,
            "L": [v.L for v in versions], "D_T": [v.D_T for v in versions],
        })
    if json_out:
        print_json({"run": str(run_dir.resolve()), "lineages": summary})
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

