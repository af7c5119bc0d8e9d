"""`envevo seeds select|pool`: choose the seeds to evolve, by the paper's filter over recorded rollouts, or as a pool
balanced across categories."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.api import SeedSelection
from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, err, fmt, note, out, print_json, renamed, sub_app, user_errors
from envevo.cli._groups import CheckOptions, grouped
from envevo.cli._verdicts import print_verifier_usage, say_budget_stop
from envevo.errors import UserError
from envevo.rollout import parse_fraction, rollout_reasons  # noqa: F401 (tests and scripts import them from here)

seeds_app = sub_app("Select seed tasks: hard for an agent, sound by the verifiers; or draw a balanced pool.")


@seeds_app.command("select")
@user_errors
@grouped
def select(
    tasks: o.TaskDirs,
    *,
    run_dir: Annotated[Path | None, o.run_option("The run holding their rollouts (`envevo rollout TASKS --run RUN`); "
                                                 "required.")] = None,
    old_rollouts: Annotated[Path | None, o.old_spelling("--rollouts", "--run")] = None,
    max_pass: Annotated[str, typer.Option("--max-pass", help="Keep tasks passed at most this fraction of "
                                          "rollouts.")] = "4/8",
    min_turns: Annotated[float, typer.Option("--min-turns", help="Keep tasks with at least this many mean "
                                             "turns.")] = 30,
    by_agent: o.ByAgent = None,
    old_agent: Annotated[str | None, o.old_spelling("--agent", "--by-agent")] = None,
    check: CheckOptions,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Also require the verifiers that gate a seed in "
                                         "`evolve` to pass: oracle, invalid-test, red team, mutation.")] = True,
    out_dir: Annotated[Path, o.out_option("Where the selected tasks and selection.json go.")] = Path("seeds"),
    json_out: o.Json = False,
    harden_dir: Annotated[Path | None, typer.Option(
        "--harden", metavar="DIR", help="Write a hardened copy (`envevo harden`, proved) into DIR of each task that "
        "is hard enough and that only the red team rejected, where harden would fix it; evolve from DIR.")] = None,
) -> None:
    """Select seeds: hard for the agent (pass ≤ --max-pass, turns ≥ --min-turns) and sound by the verifiers that gate a
    seed in `evolve` (oracle, invalid-test, red team, mutation). The red team's LLM hacker and --model-mutants use
    --model (else the judge's model of --config's [llm]). Each task's row says what `envevo harden` would fix in it
    (read from its files), or why it cannot."""
    from envevo import api

    run_dir = renamed(old_rollouts, run_dir, "seeds select --rollouts", "--run")
    by_agent = renamed(old_agent, by_agent, "seeds select --agent (whose rollouts count)", "--by-agent")
    if run_dir is None:
        raise UserError("seeds select reads recorded rollouts: give the run that holds them with --run RUN")
    config = check.check_config()
    result = asyncio.run(api.select_seeds(tasks, config, run_dir=run_dir, out_dir=out_dir, max_pass=max_pass,
                                          min_turns=min_turns, agent=by_agent, verify=verify, harden_dir=harden_dir,
                                          notify=note))
    say_budget_stop(result.budget_stop)
    print_selection(result, out_dir, json_out)


def print_selection(result: SeedSelection, out_dir: Path, json_out: bool) -> None:
    """selection.json (with the model's usage) on stdout, or a table, its usage and where it is written."""
    doc, usage = result.doc, result.usage
    if json_out:
        print_json(doc | ({"usage": usage} if usage else {}))
        return
    table = Table(title=f"seed selection (pass ≤ {doc['max_pass']}, turns ≥ {doc['min_turns']:g}"
                  + (", verified" if doc["verified"] else "") + ")"
                  + (" — SIMULATED rollouts" if any(t["simulated"] for t in doc["tasks"]) else ""))
    for c in ("task", "pass", "turns", "selected", "reasons", "harden"):
        table.add_column(c, overflow="fold")
    for t in doc["tasks"]:
        table.add_row(escape(t["task"]), f"{t['passes']}/{t['n']}", fmt(t["mean_turns"], ".1f"),
                      "[green]yes[/]" if t["selected"] else "[red]no[/]", escape("; ".join(t["reasons"]) or "-"),
                      escape(t["harden"]))
    out.print(table)
    print_verifier_usage(usage)
    err.print(f"selected {len(doc['selected'])} of {len(doc['tasks'])}: {out_dir / 'selection.json'}")


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
