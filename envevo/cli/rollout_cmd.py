"""`envevo rollout` (k trials per task, recorded and resumable) and `envevo seeds select` (the paper's seed filter)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli._common import err, out, print_json, progress, user_errors
from envevo.errors import UserError


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


@user_errors
def rollout(
    targets: list[Path] = typer.Argument(..., help="Task dirs (or folders of them), or one RUN dir: every verified version."),
    agent: str = typer.Option("sim-medium", "--agent", help="Harbor agent (terminus-2, claude-code, …), pkg.mod:Class, "
                              "or a simulated profile: sim-strong, sim-medium, sim-weak (SIMULATION)."),
    model: str | None = typer.Option(None, "--model", help="Model for a real agent, in LiteLLM form: openai/gpt-5, "
                                     "anthropic/claude-sonnet-4-5, or openai/<served model name> with --base-url."),
    base_url: str | None = typer.Option(None, "--base-url", help="The model's endpoint, for any OpenAI-compatible "
                                        "server (vLLM, SGLang, a proxy): e.g. http://gpu-host:8000/v1."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", metavar="NAME", help="Environment variable that holds "
                                           "the API key. Default: the provider's own, OPENAI_API_KEY for openai/… models "
                                           "(with --base-url and no auth, set it to any value, e.g. EMPTY)."),
    agent_kwarg: list[str] = typer.Option([], "--agent-kwarg", metavar="KEY=VALUE", help="Agent option, repeatable; JSON "
                                          "values are parsed: max_turns=50, temperature=0.7, record_terminal_session=false."),
    k: int = typer.Option(8, "-k", min=1, help="Rollouts per task."),
    env: str = typer.Option("podman", "--env", help="Harbor environment: podman, docker, daytona, modal, … or pkg.mod:Class."),
    concurrency: int = typer.Option(2, "--concurrency", min=1, help="Trials running at once."),
    store_dir: Path | None = typer.Option(None, "--store", help="For task dirs: record rollouts in this run store "
                                          "(created if missing), so they resume and `seeds select` can read them."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON list of per-task summaries."),
) -> None:
    """Run an agent k times per task; report pass count out of k, pass rate, mean turns and pass@k.

    A real agent's model runs wherever --base-url points; the agent itself runs here, its commands in the sandbox.
    Turns, tokens and cost of every rollout are recorded in the store.
    """
    from envevo.cli.verify_cmd import preflight
    from envevo.task import expand_task_dirs
    from envevo.rollout import dir_targets, rollout as run, run_targets
    from envevo.rollout._run import check_agent, parse_agent_kwargs
    from envevo.store import LineageStore

    agent_kwargs = parse_agent_kwargs(agent_kwarg)
    if base_url:
        agent_kwargs["base_url"] = base_url  # Harbor's names for its model-connection settings
    if api_key_env:
        agent_kwargs["model_api_key_name"] = api_key_env
    check_agent(agent, model, agent_kwargs)
    preflight(env)
    is_run = len(targets) == 1 and (targets[0] / "store.sqlite").is_file()
    if is_run and store_dir is not None:
        raise UserError("--store is for task dirs; a RUN dir records rollouts in its own store")
    store = LineageStore.open(targets[0] if is_run else store_dir, create=not is_run) if (is_run or store_dir) else None
    try:
        tasks = run_targets(store) if is_run else dir_targets(expand_task_dirs(targets))
        if not tasks:
            raise UserError("no tasks to roll out (a RUN needs verified versions)")
        base = store.run_dir if store is not None else Path("jobs")
        trials = (base / "rollouts" / f"{datetime.now():%Y%m%d-%H%M%S}").resolve()
        import asyncio

        with progress(f"rollouts of {agent} ({len(tasks)} task(s) × {k})", len(tasks) * k) as advance:
            summaries = asyncio.run(run(tasks, agent, model, k, env=env, concurrency=concurrency, trials_dir=trials,
                                        store=store, agent_kwargs=agent_kwargs, on_trial=lambda t, o: advance(f"{t.name} → {o.reward if o.reward is not None else o.error_kind.value}")))
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
        tokens = "-" if s.mean_input_tokens is None else f"{s.mean_input_tokens:.0f}/{_fmt(s.mean_output_tokens, '.0f')}"
        table.add_row(escape(s.task), "-" if s.generation is None else str(s.generation), s.label, _fmt(s.pass_rate),
                      _fmt(s.pass_at_k), _fmt(s.mean_turns, ".1f"), tokens, _fmt(s.cost_usd, ".4f"),
                      ", ".join(f"{a}:{b}" for a, b in s.errors.items()) or "-")
    out.print(table)
    if sim:
        err.print("simulated agents: these pass rates and turns are SIMULATION, not a model's")
    err.print(f"trial logs: {trials}")


def parse_fraction(text: str) -> float:
    try:
        a, b = text.split("/") if "/" in text else (text, "1")
        value = float(a) / float(b)
    except (ValueError, ZeroDivisionError):
        raise UserError(f"--max-pass {text!r} is not a fraction like 4/8") from None
    return value


def rollout_reasons(summary, max_pass: float, min_turns: float) -> list[str]:
    """Why a task's rollouts rule it out as a seed (empty: it is hard enough)."""
    if summary.n == 0:
        return ["no rollouts recorded; run `envevo rollout TASK --store RUN` first"]
    reasons = []
    if summary.pass_rate > max_pass + 1e-9:
        reasons.append(f"too easy: passed {summary.label} > {max_pass:.3g}")
    if summary.mean_turns is None:
        reasons.append("the agent reported no turn counts")
    elif summary.mean_turns < min_turns:
        reasons.append(f"too short: {summary.mean_turns:.1f} mean turns < {min_turns:g}")
    return reasons


@user_errors
def select(
    tasks: list[Path] = typer.Argument(..., help="Candidate seed task dirs (or folders of them)."),
    rollouts_run: Path = typer.Option(..., "--rollouts", help="Run store holding their rollouts (`envevo rollout … --store`)."),
    max_pass: str = typer.Option("4/8", "--max-pass", help="Keep tasks passed at most this fraction of rollouts."),
    min_turns: float = typer.Option(30, "--min-turns", help="Keep tasks with at least this many mean turns."),
    agent: str | None = typer.Option(None, "--agent", help="Whose rollouts count (needed when the store has several)."),
    env: str = typer.Option("podman", "--env", help="Environment for the oracle and invalid-test verifiers."),
    concurrency: int = typer.Option(3, "--concurrency", min=1),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Also require the oracle and invalid-test verifiers to pass."),
    out_dir: Path = typer.Option(Path("seeds"), "--out", help="Where the selected tasks and selection.json go."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Select seeds: hard for the agent (pass ≤ --max-pass, turns ≥ --min-turns) and sound (oracle, invalid-test)."""
    from envevo.cli.verify_cmd import preflight
    from envevo.task import expand_task_dirs
    from envevo.rollout import dir_targets, summarize
    from envevo.store import LineageStore

    limit = parse_fraction(max_pass)
    targets = dir_targets(expand_task_dirs(tasks))
    with LineageStore.open(rollouts_run, create=False) as store:
        rows = {t.task_hash: store.rollouts(t.task_hash) for t in targets}
    agents = sorted({(r.agent, r.model) for rs in rows.values() for r in rs if agent is None or r.agent == agent})
    if len(agents) > 1:
        raise UserError(f"{rollouts_run} holds rollouts of several agents ({', '.join(f'{a}/{m}' for a, m in agents)}); pick one with --agent")
    results = []
    for t in targets:
        s = summarize(t.name, [r for r in rows[t.task_hash] if (r.agent, r.model) in agents], task_hash=t.task_hash,
                      agent=agents[0][0] if agents else (agent or "-"), model=agents[0][1] if agents else None,
                      simulated=any(r.simulated for r in rows[t.task_hash]))
        results.append({"task": t.name, "path": str(t.task_dir), "summary": s, "reasons": rollout_reasons(s, limit, min_turns)})
    if verify and (survivors := [r for r in results if not r["reasons"]]):
        import asyncio

        from envevo.verify import verify_tasks

        preflight(env)
        jobs = (out_dir / "_verify").resolve()
        verdicts = asyncio.run(verify_tasks([(r["task"].replace("/", "__"), Path(r["path"])) for r in survivors], jobs,
                                            env=env, concurrency=concurrency))
        for r, v in zip(survivors, verdicts):
            r["reasons"] += [f"verifier: {x}" for x in v.reasons] if not v.ok else []
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tasks").mkdir(exist_ok=True)
    for r in results:
        if not r["reasons"]:
            dest = out_dir / "tasks" / Path(r["path"]).name
            if not dest.exists():
                shutil.copytree(r["path"], dest, symlinks=True)
    doc = {"max_pass": max_pass, "min_turns": min_turns, "verified": verify, "rollouts": str(rollouts_run),
           "selected": [r["path"] for r in results if not r["reasons"]],
           "tasks": [{"task": r["task"], "path": r["path"], "selected": not r["reasons"], "reasons": r["reasons"],
                      **r["summary"].model_dump(include={"agent", "model", "simulated", "n", "passes", "pass_rate", "mean_turns"})}
                     for r in results]}
    (out_dir / "selection.json").write_text(json.dumps(doc, indent=2))
    if json_out:
        print_json(doc)
        return
    table = Table(title=f"seed selection (pass ≤ {max_pass}, turns ≥ {min_turns:g}"
                  + (", verified" if verify else "") + ")" + (" — SIMULATED rollouts" if any(t["simulated"] for t in doc["tasks"]) else ""))
    for c in ("task", "pass", "turns", "selected", "reasons"):
        table.add_column(c, overflow="fold")
    for t in doc["tasks"]:
        table.add_row(escape(t["task"]), f"{t['passes']}/{t['n']}", _fmt(t["mean_turns"], ".1f"),
                      "[green]yes[/]" if t["selected"] else "[red]no[/]", escape("; ".join(t["reasons"]) or "-"))
    out.print(table)
    err.print(f"selected {len(doc['selected'])} of {len(results)}: {out_dir / 'selection.json'}")
