"""`envevo verify`: run the oracle and invalid-test verifiers on tasks in real sandboxes."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    STATUS,
    check_red_team,
    err,
    out,
    preflight,
    print_json,
    progress,
    usage_table,
    user_errors,
    verifier_mark,
)
from envevo.cli._verifier_model import USAGE_TITLE, model_usage, verification_model
from envevo.errors import UserError


def check_mutation(text: str) -> None:
    """--mutation on, off or sample:N, checked before any work."""
    from envevo.verify import parse_mutation

    try:
        parse_mutation(text)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def mutation_mark(report) -> str:
    """ killed/run, after the mutation verifier's mark."""
    m = report.metrics
    return f" {m['killed']}/{m['killed'] + m['survived']}" if m.get("killed", 0) + m.get("survived", 0) else ""


@user_errors
def verify(
    tasks: Annotated[list[Path], typer.Argument(help="Task dirs (Harbor or Terminal-Bench 1), or folders of tasks.")],
    env: o.Env = o.ENV,
    repeats: o.Repeats = o.REPEATS,
    concurrency: o.Concurrency = o.CONCURRENCY,
    image_map: o.ImageMapOpt = [],  # noqa: B006 (typer copies list defaults)
    config: o.ConfigFile = None,
    jobs_dir: Annotated[Path | None, typer.Option("--jobs-dir", help="Where trial logs go (default: "
                                                  "./jobs/verify-<time>).")] = None,
    red_team: o.RedTeam = o.RED_TEAM,
    mutation: o.Mutation = o.MUTATION,
    learn_rubric: o.LearnRubric = None,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    model_mutants: o.ModelMutants = 0,
    json_out: o.Json = False,
    executor_name: o.ExecutorName = o.EXECUTOR,
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
) -> None:
    """Check each task in real containers: the reference solution passes (oracle), an empty one fails (invalid-test),
    with --red-team, no exploit passes, and with --mutation, no near-miss solution passes (its score: killed/total).
    The red team's LLM hacker and --model-mutants use --model (else the judge's model of --config's [llm]).

    --json prints one list, one object per task."""
    from envevo.llm import verifiers_with_model
    from envevo.sandbox import runnable_copy
    from envevo.task import first_duplicate, load_image_map, load_task_args
    from envevo.verify import unmet_on_host, verify_tasks

    check_red_team(red_team)
    check_mutation(mutation)
    runtime = verification_model(config, model, base_url, api_key_env, red_team=red_team, mutation=mutation,
                                 model_mutants=model_mutants)
    preflight(env)
    from envevo.evolve import scale_out

    scale_out(executor_name, ray_address, max_sandboxes, start_rate, trials=True)
    mapping = load_image_map(image_map, config)
    loaded = load_task_args(tasks)  # every task is validated before any container starts
    dup = first_duplicate([t.name for t in loaded])
    if dup:
        raise UserError(f"two tasks are named {dup!r}; verify them in separate runs")
    jobs = (jobs_dir or Path("jobs") / f"verify-{datetime.now():%Y%m%d-%H%M%S}").resolve()
    jobs.mkdir(parents=True, exist_ok=True)
    # TB1 tasks and image maps need a converted copy; Harbor tasks without a map run in place.
    # Local engines: digest-pinned / mirror-prefixed references go to local stand-ins, each stated.
    prepared = {t.name: runnable_copy(t, env, mapping, jobs / "_tasks") for t in loaded}
    runnable = [(name, task_dir) for name, (task_dir, _) in prepared.items()]

    verifiers = verifiers_with_model(repeats, red_team=red_team, mutation=mutation, runtime=runtime,
                                     learn_rubric=learn_rubric, written=model_mutants)
    total = sum(len(v.trial_specs(d, env, jobs / n)) for n, d in runnable if unmet_on_host(d) is None for v in verifiers)
    t0 = time.monotonic()
    with progress(f"verifying {len(runnable)} task(s)", total) as advance:
        verdicts = asyncio.run(
            verify_tasks(
                runnable, jobs, env=env, verifiers=verifiers, concurrency=concurrency,
                on_trial_done=lambda t: advance(f"{t.task} {t.agent} → {t.reward if t.reward is not None else t.error_kind.value}"),
            )
        )
    wall = time.monotonic() - t0
    originals = {t.name: t.source for t in loaded}
    for v in verdicts:
        v.substitutions = prepared[v.task][1]
        if originals.get(v.task) and v.task_dir != originals[v.task]:
            # Fixes name the user's task dir, not the converted copy the trials ran.
            for rep in v.reports.values():
                rep.reasons = [r.replace(f"--tasks {v.task_dir}", f"--tasks {originals[v.task]}") for r in rep.reasons]

    usage = model_usage(runtime)
    if json_out:
        # One object per task; the model's usage, which is the whole command's, rides on each as `command_usage`.
        print_json([v.summary() | ({"command_usage": usage} if usage else {}) for v in verdicts])
    else:
        table = Table(title=f"envevo verify ({env}, oracle ×{repeats}, {wall:.0f} s)")
        extra = [(k, label) for k, label in (("red_team", "red team"), ("mutation", "mutation")) if k in verdicts[0].reports]
        cols = ["task", "status", "oracle", "invalid-test"] + [label for _, label in extra] + ["reasons"]
        for col in cols:
            table.add_column(col, overflow="fold")
        for v in verdicts:
            notes = [f"substituted: {s}" for s in v.substitutions] + v.reasons
            marks = [verifier_mark(v.reports["oracle"]), verifier_mark(v.reports["invalid_test"])]
            marks += [verifier_mark(v.reports[k]) + (mutation_mark(v.reports[k]) if k == "mutation" else "")
                      for k, _ in extra if k in v.reports]
            table.add_row(v.task, STATUS[v.status], *marks, escape("\n".join(notes)) or "-")
        out.print(table)
        # Notes (an exploit skipped, and why) are the same for every task: said once.
        for note in dict.fromkeys(f"{name}: {n}" for v in verdicts for name, rep in v.reports.items() for n in rep.notes):
            err.print(f"note: {escape(note)}")
        if usage:
            err.print(usage_table(USAGE_TITLE, usage))
        # Inconclusive is counted apart from fail: this host could not run those tasks, which says nothing of them.
        counts = Counter(v.status for v in verdicts)
        err.print(f"{len(verdicts)} task(s): " + ", ".join(f"{counts[s]} {s}" for s in sorted(counts))
                  + (" (inconclusive: this host could not verify them; see the reasons)" if counts["inconclusive"] else ""))
        err.print(f"trial logs: {jobs}")
    raise typer.Exit(0 if all(v.ok for v in verdicts) else 1)
