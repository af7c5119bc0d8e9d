"""`envevo evolve` and `envevo report`: evolve seeds into lineages, then render the run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envevo.cli._common import err, out, print_json, user_errors
from envevo.errors import UserError
from envevo.trace import Direction, Effort
from envevo.trace._drift import DEFAULT_MAX_DRIFT


def make_engine(name: str, llm: dict | None = None, env: str = "podman"):
    """The engine and its rubric-slot checks. `llm` holds the --model/--base-url/… options of `--engine llm`."""
    if name == "procedural":
        from envevo.evolve.engines.procedural import ProceduralEngine, quality_check
        from envevo.verify import RuleRubric

        return ProceduralEngine(), [RuleRubric(quality_check)]
    if name == "llm":
        from envevo.evolve.engines.llm import build_llm_engine

        settings, rubrics = llm_settings(**(llm or {}))
        return build_llm_engine(settings, env=env, rubric_files=rubrics)
    raise UserError(f"unknown engine {name!r}: use procedural or llm")


def llm_settings(config: Path | None = None, model: str | None = None, base_url: str | None = None,
                 api_key_env: str | None = None, role_model: list[str] | None = None, max_cost: float | None = None,
                 max_tokens: int | None = None, rubric: list[Path] | None = None):
    """envevo.toml's [llm] table with the command line's values on top."""
    from envevo.llm import load_settings

    roles = {}
    for item in role_model or []:
        role, sep, spec = item.partition("=")
        if not sep or not spec:
            raise UserError(f"--role-model {item!r}: use ROLE=provider:name, e.g. judge=openai:gpt-4.1-mini")
        roles[role.strip()] = spec.strip()
    settings = load_settings(config).with_overrides(model=model, base_url=base_url, api_key_env=api_key_env,
                                                    role_models=roles, max_cost_usd=max_cost, max_tokens=max_tokens)
    return settings, list(rubric or [])


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


def _settings(store, given, resume: bool):
    """The run's settings: new ones are stored; a resume keeps the stored ones (generations may grow)."""
    from envevo.evolve import EvolveConfig

    stored = store.run_config()
    if stored is None:
        store.set_run_config(given.model_dump(mode="json"))
        return given
    if not resume:
        raise UserError(f"{store.run_dir} already holds a run: pass --resume to continue it, or choose another --out")
    old = EvolveConfig(**stored)
    clash = old.resumable_with(given)
    if clash:
        raise UserError(f"--resume with different settings ({'; '.join(clash)}); drop them or use another --out")
    merged = old.model_copy(update={k: getattr(given, k) for k in ("generations", "trial_concurrency", "lineage_concurrency", "env", "max_drift")})
    store.set_run_config(merged.model_dump(mode="json"))
    return merged


@user_errors
def evolve(
    seeds: list[Path] = typer.Argument(..., help="Seed task dirs (e.g. made by `envevo seed procedural`)."),
    out_dir: Path = typer.Option(..., "--out", help="Run dir: holds the lineage store."),
    engine_name: str = typer.Option("procedural", "--engine", help="procedural (offline) or llm."),
    generations: int = typer.Option(15, "--generations", min=1, help="Generations per lineage."),
    effort: Effort = typer.Option(Effort.HIGH, "--effort", help="low: one pair; high: one contiguous span; max: anything."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the run (direction order, every engine choice)."),
    directions: str = typer.Option("length,scenario,skill", "--directions",
                                   help="Comma-separated directions tried each generation (one alone isolates a lever)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a run stored in --out."),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Lineages evolving at once."),
    trial_concurrency: int = typer.Option(3, "--trial-concurrency", min=1, help="Sandbox trials at once, across lineages."),
    env: str = typer.Option("podman", "--env", help="Harbor environment for verification."),
    repeats: int = typer.Option(2, "--repeats", min=1, help="Oracle runs per candidate."),
    red_team: str = typer.Option("off", "--red-team", help="Exploit agents on every candidate (reward forgery, runner hijack, "
                                 "tool shadowing, output guessing, peeking); each must score 0: on, off, or sample:N."),
    plan_budget: int = typer.Option(3, "--plan-budget", min=1, help="Proposer→Reviewer rounds per direction."),
    env_budget: int = typer.Option(3, "--env-budget", min=1, help="Modifier→verifier rounds per plan."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary per lineage."),
    model: str | None = typer.Option(None, "--model", help="llm: provider:name for every role, e.g. openai:gpt-4.1, "
                                     "anthropic:claude-sonnet-4-5, or the served name with --base-url."),
    base_url: str | None = typer.Option(None, "--base-url", help="llm: an OpenAI-compatible endpoint (vLLM, SGLang), "
                                        "e.g. http://localhost:8000/v1."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="llm: the environment variable holding the key "
                                           "(default OPENAI_API_KEY or ANTHROPIC_API_KEY)."),
    role_model: list[str] = typer.Option([], "--role-model", help="llm: ROLE=provider:name for one role (proposer, "
                                         "reviewer, modifier, judge); repeatable."),
    llm_config: Path | None = typer.Option(None, "--llm-config", help="llm: a TOML file with an \\[llm] table "
                                           "(default ./envevo.toml if present)."),
    max_cost: float | None = typer.Option(None, "--max-cost", help="llm: USD per lineage; reaching it ends the lineage "
                                          "as budget_exhausted (resumable)."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="llm: tokens per lineage, same behaviour."),
    rubric: list[Path] = typer.Option([], "--rubric", help="llm: an extra rubric TOML for the judge; repeatable."),
    max_drift: str = typer.Option(str(DEFAULT_MAX_DRIFT), "--max-drift",
                                  help="Reject a candidate whose instruction drifted more than this from the seed: "
                                  "1 − cosine similarity of the whole instruction to the seed's (all-MiniLM-L6-v2); "
                                  "the reason goes back to the Modifier. off: no bound. See docs/drift.md."),
) -> None:
    """Evolve each seed into a lineage of harder, verified generations."""
    from envevo.cli.verify_cmd import preflight
    from envevo.evolve import EvolveConfig, start_lineages
    from envevo.evolve import evolve as run_evolve
    from envevo.store import LineageStore
    from envevo.task import load_task

    from envevo.verify import parse_red_team

    try:
        parse_red_team(red_team)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    preflight(env)
    llm = dict(config=llm_config, model=model, base_url=base_url, api_key_env=api_key_env, role_model=role_model,
               max_cost=max_cost, max_tokens=max_tokens, rubric=rubric)
    engine, checks = make_engine(engine_name, llm, env)
    if engine_name == "llm":
        asyncio.run(engine.preflight())  # a missing key or a dead endpoint: one line, before any work
    given = EvolveConfig(
        engine=engine_name, generations=generations, effort=effort, seed=seed, directions=parse_directions(directions),
        plan_budget=plan_budget,
        env_budget=env_budget, env=env, repeats=repeats, red_team=red_team, trial_concurrency=trial_concurrency,
        lineage_concurrency=concurrency, max_drift=parse_max_drift(max_drift),
        # Recorded so that --resume refuses to continue a lineage with different models.
        models={role: spec.label for role, spec in engine.runtime.specs().items()} if engine_name == "llm" else {},
    )
    tasks = [load_task(s) for s in seeds]
    names = [p.resolve().name for p in seeds]
    if len(set(names)) != len(names):
        raise UserError("two seeds share a folder name; lineages are named after it, so rename one")
    for task in tasks:  # refuse seeds the engine cannot read before anything is written
        asyncio.run(engine.extract_trace(task))
    if out_dir.exists() and not resume and any(out_dir.iterdir()) and not (out_dir / "store.sqlite").exists():
        raise UserError(f"{out_dir} exists and is not an envevo run; choose another --out")
    store = LineageStore.open(out_dir, create=True)
    cfg = _settings(store, given, resume)
    if engine_name == "llm":
        engine.attach_store(store)  # usage rows per role; budgets resume from what the store recorded

    bar = Progress(
        TextColumn("{task.fields[lineage]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[stage]}"), console=err,
    )
    bars: dict[str, int] = {}

    def on_event(e):
        task_id = bars.get(e.lineage)
        if task_id is None:
            task_id = bars[e.lineage] = bar.add_task("", total=cfg.generations, completed=0, lineage=e.lineage, stage="")
        stage = f"g{e.generation:02d} {e.stage}: {e.detail}"
        bar.update(task_id, stage=stage, **({"completed": e.generation} if e.stage == "accepted" else {}))

    async def main() -> None:
        # One event loop for the whole run: Harbor keeps loop-bound locks at module level.
        lineages = await start_lineages(store, list(zip(names, tasks)), engine, cfg, checks=checks, on_event=on_event)
        for lid in lineages:
            done = store.lineage(lid).latest_generation
            if lid in bars:
                bar.update(bars[lid], completed=done)
            else:
                bars[lid] = bar.add_task("", total=cfg.generations, completed=done, lineage=lid, stage="")
        await run_evolve(store, lineages, engine, cfg, checks=checks, on_event=on_event)

    with bar:
        asyncio.run(main())

    summary = []
    for lin in store.lineages():
        versions = store.versions(lin.id)
        summary.append({
            "lineage": lin.id, "status": str(lin.status), "reason": lin.reason, "generations": lin.latest_generation,
            "L": [v.L for v in versions], "D_T": [v.D_T for v in versions],
        })
    if json_out:
        print_json({"run": str(out_dir.resolve()), "lineages": summary})
    else:
        table = Table(title=f"envevo evolve → {out_dir}")
        for col in ("lineage", "status", "generations", "L", "D_T first → last", "reason"):
            table.add_column(col, overflow="fold")
        for s in summary:
            dts = [d for d in s["D_T"] if d is not None]
            table.add_row(s["lineage"], s["status"], str(s["generations"]), " ".join(map(str, s["L"])),
                          f"{dts[0]:.2f} → {dts[-1]:.2f}" if dts else "-", s["reason"] or "")
        out.print(table)
        err.print(f"next: envevo lineage show {out_dir} · envevo report {out_dir}")


@user_errors
def report(
    runs: list[Path] = typer.Argument(..., help="Run dir(s) written by `envevo evolve`; several (e.g. one per effort) "
                                      "share one evaluation section."),
    out_file: Path | None = typer.Option(None, "--out", help="HTML file to write (default FIRST_RUN/report.html)."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Write a self-contained HTML report: the analyses of recorded rollouts (pass rate and turns per generation,
    direction effects, Spearman validity of D_T), then per run D_T and its terms, mutation rates, ξ and diffs."""
    from envevo.report import build_report

    for run in runs:
        if not (run / "store.sqlite").is_file():
            raise UserError(f"{run} is not a run dir (no store.sqlite); pass the --out dir of `envevo evolve`")
    path = build_report(runs, out_file)
    if json_out:
        print_json({"report": str(path.resolve())})
    else:
        out.print(f"report: {path.resolve()}")
