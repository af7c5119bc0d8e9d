"""`envevo rollout` (k trials per task, recorded and resumable) and `envevo seeds select` (the paper's seed filter)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import check_red_team, err, fmt, is_run_dir, out, preflight, print_json, progress, user_errors
from envevo.errors import UserError
from envevo.evolve import EvolveConfig
from envevo.rollout import parse_fraction, rollout_reasons  # noqa: F401 (tests and scripts import them from here)

D = EvolveConfig()


@user_errors
def rollout(
    targets: Annotated[list[Path], typer.Argument(help="Task dirs (or folders of them), or one RUN dir: every "
                                                  "verified version.")],
    agent: Annotated[str, typer.Option("--agent", help="Harbor agent (terminus-2, claude-code, …), pkg.mod:Class, "
                                       "or a simulated profile: sim-strong, sim-medium, sim-weak (SIMULATION).")] = "sim-medium",
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    agent_kwarg: Annotated[list[str], typer.Option("--agent-kwarg", metavar="KEY=VALUE", help="Agent option, "
                                                   "repeatable; JSON values are parsed: max_turns=50, temperature=0.7, "
                                                   "record_terminal_session=false.")] = [],  # noqa: B006
    k: Annotated[int, typer.Option("-k", min=1, help="Rollouts per task.")] = 8,
    env: o.Env = D.env,
    concurrency: o.Concurrency = 2,
    store_dir: Annotated[Path | None, typer.Option("--store", help="For task dirs: record rollouts in this run store "
                                                   "(created if missing), so they resume and `seeds select` can read "
                                                   "them.")] = None,
    json_out: o.Json = False,
    executor_name: o.ExecutorName = "asyncio",
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
) -> None:
    """Run an agent k times per task; report pass count out of k, pass rate, mean turns and pass@k.

    A real agent's model runs wherever --base-url points; the agent itself runs here, its commands in the sandbox.
    Turns, tokens and cost of every rollout are recorded in the store. --model takes PROVIDER:NAME (any LiteLLM
    provider; LiteLLM's PROVIDER/NAME is read too). --json prints one list of per-task summaries.
    """
    from envevo.llm import litellm_model
    from envevo.rollout import check_agent, dir_targets, parse_agent_kwargs, run_targets
    from envevo.rollout import rollout as run
    from envevo.store import LineageStore
    from envevo.task import expand_task_dirs

    model = litellm_model(model, base_url=base_url) if model is not None else None
    agent_kwargs = parse_agent_kwargs(agent_kwarg)
    if base_url:
        agent_kwargs["base_url"] = base_url  # Harbor's names for its model-connection settings
    if api_key_env:
        agent_kwargs["model_api_key_name"] = api_key_env
    check_agent(agent, model, agent_kwargs)
    preflight(env)
    from envevo.evolve import scale_out

    scale_out(executor_name, ray_address, max_sandboxes, start_rate, trials=True)
    is_run = len(targets) == 1 and is_run_dir(targets[0])
    if is_run and store_dir is not None:
        raise UserError("--store is for task dirs; a RUN dir records rollouts in its own store")
    store_path = targets[0] if is_run else store_dir
    store = LineageStore.open(store_path, create=not is_run) if store_path is not None else None
    try:
        tasks = run_targets(store) if is_run else dir_targets(expand_task_dirs(targets))
        if not tasks:
            raise UserError("no tasks to roll out (a RUN needs verified versions)")
        base = store.run_dir if store is not None else Path("jobs")
        trials = (base / "rollouts" / f"{datetime.now():%Y%m%d-%H%M%S}").resolve()
        with progress(f"rollouts of {agent} ({len(tasks)} task(s) × {k})", len(tasks) * k) as advance:
            summaries = asyncio.run(run(tasks, agent, model, k, env=env, concurrency=concurrency, trials_dir=trials,
                                        store=store, agent_kwargs=agent_kwargs, on_trial=lambda t, r: advance(
                                            f"{t.name} → {r.reward if r.reward is not None else r.error_kind.value}")))
    finally:
        if store is not None:
            store.close()
    if json_out:
        print_json([s.model_dump() for s in summaries])
        return
    sim = any(s.simulated for s in summaries)
    table = Table(title=f"rollouts: {agent} / {summaries[0].model or '-'}" + (" — SIMULATION" if sim else ""))
    for c in ("task", "gen", "pass", "rate", f"pass@{k}", "turns", "tokens in/out", "cost $", "errors"):
        table.add_column(c, overflow="fold")
    for s in summaries:
        tokens = f"{s.mean_input_tokens:.0f}/{fmt(s.mean_output_tokens, '.0f')}" if s.mean_input_tokens is not None \
            else "unknown" if s.model and s.n else "-"  # a model agent whose harness counted none: not free
        table.add_row(escape(s.task), "-" if s.generation is None else str(s.generation), s.label, fmt(s.pass_rate),
                      fmt(s.pass_at_k), fmt(s.mean_turns, ".1f"), tokens, fmt(s.cost_usd, ".4f"),
                      ", ".join(f"{a}:{b}" for a, b in s.errors.items()) or "-")
    out.print(table)
    if sim:
        err.print("simulated agents: these pass rates and turns are SIMULATION, not a model's")
    err.print(f"trial logs: {trials}")


@user_errors
def select(
    tasks: Annotated[list[Path], typer.Argument(help="Candidate seed task dirs (or folders of them).")],
    rollouts_run: Annotated[Path, typer.Option("--rollouts", help="Run store holding their rollouts (`envevo rollout "
                                               "… --store`).")],
    max_pass: Annotated[str, typer.Option("--max-pass", help="Keep tasks passed at most this fraction of "
                                          "rollouts.")] = "4/8",
    min_turns: Annotated[float, typer.Option("--min-turns", help="Keep tasks with at least this many mean "
                                             "turns.")] = 30,
    agent: Annotated[str | None, typer.Option("--agent", help="Whose rollouts count (needed when the store has "
                                              "several).")] = None,
    env: o.Env = D.env,
    concurrency: o.Concurrency = D.trial_concurrency,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Also require the verifiers that gate a seed in "
                                         "`evolve` to pass: oracle, invalid-test, red team, mutation.")] = True,
    red_team: o.RedTeam = D.red_team,
    mutation: o.Mutation = D.mutation,
    out_dir: Annotated[Path, o.out_option("Where the selected tasks and selection.json go.")] = Path("seeds"),
    json_out: o.Json = False,
) -> None:
    """Select seeds: hard for the agent (pass ≤ --max-pass, turns ≥ --min-turns) and sound by the verifiers that gate a
    seed in `evolve` (oracle, invalid-test, red team, mutation)."""
    from envevo.cli.verify_cmd import check_mutation
    from envevo.rollout import select_seeds

    check_red_team(red_team)
    check_mutation(mutation)
    doc = asyncio.run(select_seeds(tasks, rollouts_run, out_dir, max_pass=max_pass, min_turns=min_turns, agent=agent,
                                   verify=verify, env=env, concurrency=concurrency, red_team=red_team,
                                   mutation=mutation, notify=lambda line: err.print(line, highlight=False, markup=False)))
    if json_out:
        print_json(doc)
        return
    table = Table(title=f"seed selection (pass ≤ {max_pass}, turns ≥ {min_turns:g}"
                  + (", verified" if verify else "") + ")" + (" — SIMULATED rollouts" if any(t["simulated"] for t in doc["tasks"]) else ""))
    for c in ("task", "pass", "turns", "selected", "reasons"):
        table.add_column(c, overflow="fold")
    for t in doc["tasks"]:
        table.add_row(escape(t["task"]), f"{t['passes']}/{t['n']}", fmt(t["mean_turns"], ".1f"),
                      "[green]yes[/]" if t["selected"] else "[red]no[/]", escape("; ".join(t["reasons"]) or "-"))
    out.print(table)
    err.print(f"selected {len(doc['selected'])} of {len(doc['tasks'])}: {out_dir / 'selection.json'}")
