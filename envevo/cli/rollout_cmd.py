"""`envevo rollout`: k trials per task with any agent, recorded in a run and resumable."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import err, fmt, is_run_dir, out, pass_env, preflight, print_json, progress, renamed, user_errors
from envevo.errors import UserError

#: One answer of a rollout agent's model: room for a long reasoning turn and its commands (the LLM engine's roles
#: get 8k of answer plus 16k of reasoning), far below a runaway's.
DEFAULT_OUTPUT_CAP = 16384

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
    max_output_tokens: Annotated[int, typer.Option("--max-output-tokens", min=1, help="Output cap on one answer of "
                                                   "the agent's model, for agents that take one (terminus-2 via "
                                                   "llm_call_kwargs, goose, mini-swe-agent, mcode); an --agent-kwarg "
                                                   "that sets it wins.")] = DEFAULT_OUTPUT_CAP,
    k: Annotated[int, typer.Option("-k", min=1, help="Rollouts per task.")] = 8,
    env: o.Env = o.ENV,
    concurrency: o.Concurrency = o.CONCURRENCY,
    pass_env_names: o.PassEnv = [],  # noqa: B006 (typer copies list defaults)
    run_dir: Annotated[Path | None, o.run_option("For task dirs: record their rollouts in this run (created if "
                                                 "missing), so they resume and `seeds select --run` can read them.")
                       ] = None,
    old_store: Annotated[Path | None, o.old_spelling("--store", "--run")] = None,
    json_out: o.Json = False,
    executor_name: o.ExecutorName = o.EXECUTOR,
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
) -> None:
    """Run an agent k times per task; report pass count out of k, pass rate, mean turns and pass@k.

    A real agent's model runs wherever --base-url points; the agent itself runs here, its commands in the sandbox.
    Turns, tokens and cost of every rollout are recorded in the store. --model takes PROVIDER:NAME (any LiteLLM
    provider; LiteLLM's PROVIDER/NAME is read too). --json prints one list of per-task summaries.
    """
    from envevo._home import private_dir
    from envevo.llm import litellm_model
    from envevo.rollout import check_agent, dir_targets, is_simulated, parse_agent_kwargs, run_targets
    from envevo.rollout import rollout as run
    from envevo.runtime import with_output_cap
    from envevo.store import LineageStore
    from envevo.task import expand_task_dirs

    run_dir = renamed(old_store, run_dir, "rollout --store", "--run")
    model = litellm_model(model, base_url=base_url) if model is not None else None
    agent_kwargs = parse_agent_kwargs(agent_kwarg)
    if base_url:
        agent_kwargs["base_url"] = base_url  # Harbor's names for its model-connection settings
    if api_key_env:
        agent_kwargs["model_api_key_name"] = api_key_env
    if not is_simulated(agent):  # a model that never stops is cut here, as the LLM engine's roles are
        agent_kwargs = with_output_cap(agent, agent_kwargs, max_output_tokens)
    check_agent(agent, model, agent_kwargs)
    pass_env(pass_env_names, None)
    preflight(env)
    from envevo.evolve import scale_out

    scale_out(executor_name, ray_address, max_sandboxes, start_rate, trials=True)
    is_run = len(targets) == 1 and is_run_dir(targets[0])
    if is_run and run_dir is not None:
        raise UserError("--run is for task dirs; a RUN dir given as the target records rollouts in its own store")
    store_path = targets[0] if is_run else run_dir
    store = LineageStore.open(store_path, create=not is_run, migrate=True) if store_path is not None else None
    try:
        tasks = run_targets(store) if is_run else dir_targets(expand_task_dirs(targets))
        if not tasks:
            raise UserError("no tasks to roll out (a RUN needs verified versions)")
        base = store.run_dir if store is not None else Path("jobs")
        trials = private_dir((base / "rollouts" / f"{datetime.now():%Y%m%d-%H%M%S}").resolve())  # 0700: trial logs
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
                      ", ".join([f"{a}:{b}" for a, b in s.errors.items()]
                                + ([f"infrastructure_error:{s.infrastructure_errors} (not counted; retried on the "
                                    f"next run: {'; '.join(s.infrastructure_reasons) or 'no reason given'})"]
                                   if s.infrastructure_errors else [])) or "-")
    out.print(table)
    if sim:
        err.print("simulated agents: these pass rates and turns are SIMULATION, not a model's")
    err.print(f"trial logs: {trials}")

