"""`envevo seeds select|pool`: choose the seeds to evolve, by the paper's filter over recorded rollouts, or as a pool
balanced across categories."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    INTERRUPTED_NO_SANDBOX,
    check_red_team,
    err,
    fmt,
    out,
    pass_env,
    print_json,
    renamed,
    sub_app,
    usage_table,
    user_errors,
)
from envevo.cli._verifier_model import USAGE_TITLE, budget_stop, model_usage, verification_model
from envevo.errors import UserError
from envevo.rollout import parse_fraction, rollout_reasons  # noqa: F401 (tests and scripts import them from here)
from envevo.verify import RED_TEAM

seeds_app = sub_app("Select seed tasks: hard for an agent, sound by the verifiers; or draw a balanced pool.")


@seeds_app.command("select")
@user_errors
def select(
    tasks: Annotated[list[Path], typer.Argument(help="Candidate seed task dirs (or folders of them).")],
    run_dir: Annotated[Path | None, o.run_option("The run holding their rollouts (`envevo rollout TASKS --run RUN`); "
                                                 "required.")] = None,
    old_rollouts: Annotated[Path | None, o.old_spelling("--rollouts", "--run")] = None,
    max_pass: Annotated[str, typer.Option("--max-pass", help="Keep tasks passed at most this fraction of "
                                          "rollouts.")] = "4/8",
    min_turns: Annotated[float, typer.Option("--min-turns", help="Keep tasks with at least this many mean "
                                             "turns.")] = 30,
    by_agent: o.ByAgent = None,
    old_agent: Annotated[str | None, o.old_spelling("--agent", "--by-agent")] = None,
    env: o.Env = o.ENV,
    concurrency: o.Concurrency = o.CONCURRENCY,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Also require the verifiers that gate a seed in "
                                         "`evolve` to pass: oracle, invalid-test, red team, mutation.")] = True,
    red_team: o.RedTeam = o.RED_TEAM,
    mutation: o.Mutation = o.MUTATION,
    config: o.ConfigFile = None,
    pass_env_names: o.PassEnv = [],  # noqa: B006 (typer copies list defaults)
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    model_mutants: o.ModelMutants = 0,
    max_tokens: o.CommandMaxTokens = None,
    out_dir: Annotated[Path, o.out_option("Where the selected tasks and selection.json go.")] = Path("seeds"),
    json_out: o.Json = False,
    executor_name: o.ExecutorName = o.EXECUTOR,
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
    harden_dir: Annotated[Path | None, typer.Option(
        "--harden", metavar="DIR", help="Write a hardened copy (`envevo harden`, proved) into DIR of each task that "
        "is hard enough and that only the red team rejected, where harden would fix it; evolve from DIR.")] = None,
) -> None:
    """Select seeds: hard for the agent (pass ≤ --max-pass, turns ≥ --min-turns) and sound by the verifiers that gate a
    seed in `evolve` (oracle, invalid-test, red team, mutation). The red team's LLM hacker and --model-mutants use
    --model (else the judge's model of --config's [llm]). Each task's row says what `envevo harden` would fix in it
    (read from its files), or why it cannot."""
    from envevo.cli.verify_cmd import check_mutation
    from envevo.evolve import scale_out
    from envevo.rollout import select_seeds

    run_dir = renamed(old_rollouts, run_dir, "seeds select --rollouts", "--run")
    by_agent = renamed(old_agent, by_agent, "seeds select --agent (whose rollouts count)", "--by-agent")
    if run_dir is None:
        raise UserError("seeds select reads recorded rollouts: give the run that holds them with --run RUN")
    check_red_team(red_team)
    check_mutation(mutation)
    runtime = None
    unused = [flag for flag, given in (("--model", model), ("--base-url", base_url), ("--api-key-env", api_key_env),
                                       ("--model-mutants", model_mutants), ("--max-tokens", max_tokens)) if given]
    if not verify and unused:
        raise UserError(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} for the verifiers, and --no-verify "
                        "runs none: drop it, or verify")
    if harden_dir is not None and (not verify or red_team == "off"):
        raise UserError("--harden hardens the seeds only the red team rejected: it needs --verify and the red team on")
    if harden_dir is not None:
        from envevo.harden import check_out

        check_out(harden_dir.absolute(), overwrite=False)  # before any container starts
    if verify:  # only the verifiers start sandboxes (and ask a model) here
        pass_env(pass_env_names, config)
        scale_out(executor_name, ray_address, max_sandboxes, start_rate, trials=True)
        runtime = verification_model(config, model, base_url, api_key_env, red_team=red_team, mutation=mutation,
                                     model_mutants=model_mutants, max_tokens=max_tokens)
    doc = asyncio.run(select_seeds(tasks, run_dir, out_dir, max_pass=max_pass, min_turns=min_turns, agent=by_agent,
                                   verify=verify, env=env, concurrency=concurrency, red_team=red_team,
                                   mutation=mutation, model=runtime, model_mutants=model_mutants,
                                   notify=lambda line: err.print(line, highlight=False, markup=False)))
    _harden_previews(doc)
    if harden_dir is not None:
        doc["hardened"] = _harden_rejected(doc, harden_dir, out_dir / "_harden", env=env, concurrency=concurrency,
                                           mutation=mutation)
    usage = model_usage(runtime)
    if (stop := budget_stop(runtime)) is not None:  # the cap stopped the model: said once, on stderr
        err.print(stop, markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(doc | ({"usage": usage} if usage else {}))
        return
    table = Table(title=f"seed selection (pass ≤ {max_pass}, turns ≥ {min_turns:g}"
                  + (", verified" if verify else "") + ")" + (" — SIMULATED rollouts" if any(t["simulated"] for t in doc["tasks"]) else ""))
    for c in ("task", "pass", "turns", "selected", "reasons", "harden"):
        table.add_column(c, overflow="fold")
    for t in doc["tasks"]:
        table.add_row(escape(t["task"]), f"{t['passes']}/{t['n']}", fmt(t["mean_turns"], ".1f"),
                      "[green]yes[/]" if t["selected"] else "[red]no[/]", escape("; ".join(t["reasons"]) or "-"),
                      escape(t["harden"]))
    out.print(table)
    if usage:
        err.print(usage_table(USAGE_TITLE, usage))
    err.print(f"selected {len(doc['selected'])} of {len(doc['tasks'])}: {out_dir / 'selection.json'}")


_RED_TEAM_REASON = f"verifier: {RED_TEAM}: "


def _harden_previews(doc: dict) -> None:
    """Each task's `harden` entry: what `envevo harden` would fix in it, from its files and the red team's verdict."""
    from envevo.harden import preview_harden
    from envevo.task import load_task

    for t in doc["tasks"]:
        broke = ["the red team"] if any(r.startswith(_RED_TEAM_REASON) for r in t["reasons"]) else []
        t["harden"] = preview_harden(load_task(Path(t["path"])), broken_by=broke).text


def _harden_rejected(doc: dict, out: Path, jobs: Path, *, env: str, concurrency: int, mutation: str | None) -> list[dict]:
    """Harden (and prove) each task that only the red team rejected and that harden would fix, into `out`."""
    from envevo.evolve import EvolveConfig
    from envevo.harden import OutFolder, harden_task, out_name
    from envevo.task import load_task

    picked = [load_task(Path(t["path"])) for t in doc["tasks"] if t["reasons"] and t["harden"].startswith("harden "
              "would fix") and all(r.startswith(_RED_TEAM_REASON) for r in t["reasons"])]
    folder = OutFolder(out, [out_name(t) for t in picked], overwrite=False)
    folder.start()
    gate, cfg = asyncio.Semaphore(concurrency), EvolveConfig()

    async def one(task) -> dict:
        r = await harden_task(task, folder.out, env=env, jobs_dir=jobs.resolve(),
                              repeats=cfg.repeats, mutation=mutation or cfg.mutation, concurrency=concurrency,
                              gate=gate, overwrite=True, dest_name=out_name(task))
        folder.add(r)
        err.print(f"{task.name}: {r.status}" + (f" → {r.out}" if r.out else f": {r.reason}"), markup=False,
                  highlight=False)
        return {"task": task.name, "status": r.status, "reason": r.reason, "out": r.out}

    async def run_all() -> list[dict]:
        return list(await asyncio.gather(*(one(t) for t in picked)))

    return asyncio.run(run_all()) if picked else []


@seeds_app.command("pool")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def pool(
    tasks: Annotated[list[Path], typer.Argument(help="Candidate task dirs (or folders of them).")],
    per_category: Annotated[int, typer.Option("--per-category", help="Tasks drawn from each category.")],
    categories: Annotated[str | None, typer.Option("--categories", help="Comma-separated categories to draw from "
                                                   "(default: every category the tasks have).")] = None,
    out_dir: Annotated[Path, o.out_option("Where the pool's tasks/ and pool.json go.")] = Path("pool"),
    seed: o.Seed = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing pool at --out.")] = False,
    json_out: o.Json = False,
) -> None:
    """Draw a seed pool balanced across categories (task.toml [metadata] category): N tasks from each."""
    from envevo.rollout import POOL_FILE, seed_pool

    wanted = [c.strip() for c in categories.split(",") if c.strip()] if categories else None
    doc = seed_pool(tasks, out_dir, per_category, categories=wanted, seed=seed, overwrite=force)
    if json_out:
        print_json(doc)
        return
    table = Table(title=f"seed pool: {per_category} per category, {doc['size']} tasks")
    for c in ("category", "available", "drawn"):
        table.add_column(c, justify="left" if c == "category" else "right")
    for c, row in doc["composition"].items():
        table.add_row(c, str(row["available"]), str(row["drawn"]))
    out.print(table)
    if doc["left_out"]:
        err.print("left out: " + ", ".join(f"{c} ({n})" for c, n in doc["left_out"].items()), markup=False)
    if doc["duplicates"]:
        err.print(f"{len(doc['duplicates'])} duplicate task(s) counted once", markup=False)
    err.print(f"wrote {out_dir / POOL_FILE}", markup=False, highlight=False)
