"""`envevo rollout`: k trials per task with any agent, recorded in a run and resumable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.api import DEFAULT_OUTPUT_CAP, RolloutConfig
from envevo.cli import _options as o
from envevo.cli._common import err, fmt, note, out, print_json, progress, renamed, user_errors
from envevo.cli._groups import ScaleOptions, TrialOptions, built, grouped

__all__ = ["DEFAULT_OUTPUT_CAP", "rollout"]


@user_errors
@grouped
def rollout(
    targets: Annotated[list[Path], typer.Argument(help="Task dirs (or folders of them), or one RUN dir: every "
                                                  "verified version.")],
    *,
    agent: Annotated[str, typer.Option("--agent", help="Harbor agent (terminus-2, claude-code, …), pkg.mod:Class, "
                                       "or a simulated profile: sim-strong, sim-medium, sim-weak (SIMULATION).")
                     ] = RolloutConfig.model_fields["agent"].default,
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
    k: Annotated[int, typer.Option("-k", min=1, help="Rollouts per task.")] = RolloutConfig.model_fields["k"].default,
    sandbox: TrialOptions,
    run_dir: Annotated[Path | None, o.run_option("For task dirs: record their rollouts in this run (created if "
                                                 "missing), so they resume and `seeds select --run` can read them.")
                       ] = None,
    old_store: Annotated[Path | None, o.old_spelling("--store", "--run")] = None,
    json_out: o.Json = False,
    scale: ScaleOptions,
) -> None:
    """Run an agent k times per task; report pass count out of k, pass rate, mean turns and pass@k.

    A real agent's model runs wherever --base-url points; the agent itself runs here, its commands in the sandbox.
    Turns, tokens and cost of every rollout are recorded in the store. --model takes PROVIDER:NAME (any LiteLLM
    provider; LiteLLM's PROVIDER/NAME is read too). --json prints one list of per-task summaries.
    """
    from envevo import api
    from envevo.rollout import parse_agent_kwargs

    config = built(RolloutConfig, agent=agent, model=model, base_url=base_url, api_key_env=api_key_env,
                   agent_kwargs=parse_agent_kwargs(agent_kwarg), max_output_tokens=max_output_tokens, k=k,
                   run_dir=renamed(old_store, run_dir, "rollout --store", "--run"), sandbox=sandbox.sandbox_config(),
                   scale=scale.scale_config())
    result = asyncio.run(api.rollout(targets, config, notify=note, progress=progress))
    print_rollouts(result, config, json_out)


def print_rollouts(result, config: RolloutConfig, json_out: bool) -> None:
    """The per-task summaries as --json's list, or as a table on stdout (where the trial logs are on stderr)."""
    summaries, trials, agent, k = result.summaries, result.trials, config.agent, config.k
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

