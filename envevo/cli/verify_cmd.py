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
    check_output,
    check_red_team,
    err,
    out,
    pass_env,
    preflight,
    print_json,
    progress,
    usage_table,
    user_errors,
    verdicts_exit_code,
    verifier_mark,
)
from envevo.cli._verifier_model import USAGE_TITLE, budget_stop, model_usage, verification_model
from envevo.errors import ExitCode, UserError


def check_mutation(text: str) -> None:
    """--mutation on, off or sample:N, checked before any work."""
    from envevo.verify import parse_mutation

    try:
        parse_mutation(text)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def mutation_mark(report) -> str:
    """ killed/judged, after the mutation verifier's mark, and how many were equivalent (judged neither way)."""
    m = report.metrics
    judged = m.get("killed", 0) + m.get("survived", 0)
    text = f" {m['killed']}/{judged}" if judged else ""
    return text + (f" ({m['equivalent']} equivalent)" if m.get("equivalent") else "")


@user_errors
def verify(
    tasks: Annotated[list[Path], typer.Argument(help="Task dirs (Harbor or Terminal-Bench 1), or folders of tasks.")],
    env: o.Env = o.ENV,
    repeats: o.Repeats = o.REPEATS,
    concurrency: o.Concurrency = o.CONCURRENCY,
    image_map: o.ImageMapOpt = [],  # noqa: B006 (typer copies list defaults)
    config: o.ConfigFile = None,
    pass_env_names: o.PassEnv = [],  # noqa: B006 (typer copies list defaults)
    jobs_dir: Annotated[Path | None, typer.Option("--jobs-dir", help="Where trial logs go (default: "
                                                  "./jobs/verify-<time>).")] = None,
    red_team: o.RedTeam = o.RED_TEAM,
    mutation: o.Mutation = o.MUTATION,
    learn_rubric: o.LearnRubric = None,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    model_mutants: o.ModelMutants = 0,
    max_tokens: o.CommandMaxTokens = None,
    json_out: o.Json = False,
    executor_name: o.ExecutorName = o.EXECUTOR,
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
) -> None:
    """Check each task in real containers: the reference solution passes (oracle), an empty one fails (invalid-test),
    with --red-team, no exploit passes, and with --mutation, no near-miss solution passes (its score: killed/total).
    A task whose tests miss a near miss that changes its end state is weak, not fail (unless --mutation strict).
    The red team's LLM hacker and --model-mutants use --model (else the judge's model of --config's [llm]).

    --json prints one list, one object per task (status ok, weak, inconclusive or fail; survivors: the near misses
    the tests let through; equivalent: those that end as the solution does).

    Exit code: 0 every task ok; 1 some task fails (a task refused before any container starts counts as failed);
    3 none fails but some verdict is inconclusive (this host could not run it); 4 none fails nor is inconclusive but
    some task is weak (its tests miss a near miss); 2 bad input, or every task refused."""
    from envevo.task import first_duplicate, load_image_map, load_task_batch

    # Each task loaded (and validated) on its own, before any container starts and before the heavy imports: a path
    # that does not exist is said at once; a task refused here gets its one line in the results, the others run.
    loaded, refused = load_task_batch(tasks)
    from envevo._home import private_dir
    from envevo.llm import verifiers_with_model
    from envevo.sandbox import runnable_copy
    from envevo.verify import mutation_strict, registered, trial_line, unmet_on_host, verify_tasks

    check_red_team(red_team)
    check_mutation(mutation)
    if jobs_dir is not None:
        check_output(jobs_dir, "--jobs-dir", folder=True)
    runtime = verification_model(config, model, base_url, api_key_env, red_team=red_team, mutation=mutation,
                                 model_mutants=model_mutants, max_tokens=max_tokens)
    pass_env(pass_env_names, config)
    preflight(env)
    from envevo.evolve import scale_out

    scale_out(executor_name, ray_address, max_sandboxes, start_rate, trials=True)
    mapping = load_image_map(image_map, config)
    dup = first_duplicate([t.name for t in loaded])
    if dup:
        raise UserError(f"two tasks are named {dup!r}; verify them in separate runs")
    jobs = (jobs_dir or Path("jobs") / f"verify-{datetime.now():%Y%m%d-%H%M%S}").resolve()
    private_dir(jobs)  # 0700 when envevo creates it: trial logs hold task output
    # TB1 tasks and image maps need a converted copy; Harbor tasks without a map run in place.
    # Local engines: digest-pinned / mirror-prefixed references go to local stand-ins, each stated.
    prepared = {}
    for t in loaded:
        try:
            prepared[t.name] = runnable_copy(t, env, mapping, jobs / "_tasks")
        except UserError as exc:
            refused.append((t.source or Path(t.name), str(exc)))
    runnable = [(name, task_dir) for name, (task_dir, _) in prepared.items()]
    if not runnable:
        print_refused(refused, json_out)
        raise typer.Exit(ExitCode.USAGE)  # nothing could be verified

    verifiers = verifiers_with_model(repeats, red_team=red_team, mutation=mutation, runtime=runtime,
                                     learn_rubric=learn_rubric, written=model_mutants)
    total = sum(len(v.trial_specs(d, env, jobs / n)) for n, d in runnable if unmet_on_host(d) is None for v in verifiers)
    t0 = time.monotonic()
    with progress(f"verifying {len(runnable)} task(s)", total) as advance:
        verdicts = asyncio.run(
            verify_tasks(
                runnable, jobs, env=env, verifiers=verifiers, concurrency=concurrency,
                on_trial_done=lambda t: advance(f"{t.task}: {trial_line(t)}"), strict=mutation_strict(mutation),
            )
        )
    wall = time.monotonic() - t0
    originals = {t.name: t.source for t in loaded}
    # Fixes name the user's task dir, not the converted copy the trials ran.
    verdicts = [v.naming(shown) if (shown := originals.get(v.task)) and v.task_dir != shown else v for v in verdicts]
    for v in verdicts:
        v.substitutions = prepared[v.task][1]

    usage = model_usage(runtime)
    if json_out:
        # One object per task; the model's usage, which is the whole command's, rides on each as `command_usage`.
        print_json([v.summary() | ({"command_usage": usage} if usage else {}) for v in verdicts]
                   + [refusal(d, why) for d, why in refused])
    else:
        table = Table(title=f"envevo verify ({env}, oracle ×{repeats}, {wall:.0f} s)")
        specs = [s for s in registered() if s.name in verdicts[0].reports]
        cols = ["task", "status"] + [s.label for s in specs] + ["reasons"]
        for col in cols:
            table.add_column(col, overflow="fold")
        for v in verdicts:
            notes = [f"substituted: {s}" for s in v.substitutions] + v.reasons
            marks = [verifier_mark(v.reports[s.name], v.strict) + (mutation_mark(v.reports[s.name]) if s.weakens else "")
                     if s.name in v.reports else "-" for s in specs]
            table.add_row(v.task, STATUS[v.status], *marks, escape("\n".join(notes)) or "-")
        for d, why in refused:
            table.add_row(escape(d.name), REFUSED, *["-"] * (len(cols) - 3), escape(why))
        out.print(table)
        # A note every task has (an exploit skipped, and why) is said once; one of a task's own (an equivalent
        # mutant) names the task.
        by_task = {v.task: [f"{name}: {n}" for name, rep in v.reports.items() for n in rep.notes] for v in verdicts}
        shared = set.intersection(*(set(n) for n in by_task.values()))
        for note in dict.fromkeys(n for said in by_task.values() for n in said if n in shared):
            err.print(f"note: {escape(note)}")
        for task, said in by_task.items():
            for note in dict.fromkeys(n for n in said if n not in shared):
                err.print(f"note: {escape(task)}: {escape(note)}")
        if usage:
            err.print(usage_table(USAGE_TITLE, usage))
        # Inconclusive is counted apart from fail: this host could not run those tasks, which says nothing of them.
        counts = Counter(v.status for v in verdicts)
        err.print(f"{len(verdicts)} task(s): " + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
                  + (" (inconclusive: this host could not verify them; see the reasons)" if counts["inconclusive"] else ""))
        err.print(f"trial logs: {jobs}")
    if (stop := budget_stop(runtime)) is not None:  # the cap stopped the model: said once, on stderr
        err.print(stop, markup=False, highlight=False, soft_wrap=True)
    # A refused task counts as a failed one (exit 1); all refused is exit 2, above.
    raise typer.Exit(verdicts_exit_code([v.status for v in verdicts] + ["fail"] * len(refused)))


REFUSED = "[bold red]refused[/]"
STATUSES = ("ok", "weak", "inconclusive", "fail")  # best to worst, the order the summary counts them


def refusal(task_dir: Path, reason: str) -> dict:
    """The --json object of a task refused before any container started (it cannot be loaded or run as given)."""
    return {"task": task_dir.name, "task_dir": str(task_dir), "status": "refused", "ok": False, "reason": reason}


def print_refused(refused: list[tuple[Path, str]], json_out: bool) -> None:
    if json_out:
        print_json([refusal(d, why) for d, why in refused])
        return
    for d, why in refused:
        err.print(f"[bold red]refused:[/] {escape(d.name)}: {escape(why)}", highlight=False, soft_wrap=True)
