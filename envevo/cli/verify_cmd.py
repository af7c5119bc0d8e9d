"""`envevo verify`: run the oracle and invalid-test verifiers on tasks in real sandboxes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.api import VerifyResult, refusal
from envevo.cli import _options as o
from envevo.cli._common import check_output, err, out, print_json, run_library, user_errors
from envevo.cli._groups import CheckOptions, grouped
from envevo.cli._verdicts import REFUSED, STATUS, print_refused, print_verifier_usage, say_budget_stop, verifier_mark
from envevo.verify import registered

__all__ = ["REFUSED", "print_refused", "refusal", "verify"]


def mutation_mark(report) -> str:
    """ killed/judged, after the mutation verifier's mark, and how many were equivalent (judged neither way)."""
    m = report.metrics
    judged = m.get("killed", 0) + m.get("survived", 0)
    text = f" {m['killed']}/{judged}" if judged else ""
    return text + (f" ({m['equivalent']} equivalent)" if m.get("equivalent") else "")


@user_errors
@grouped
def verify(
    tasks: o.TaskDirs,
    *,
    check: CheckOptions,
    jobs_dir: Annotated[Path | None, typer.Option("--jobs-dir", help="Where trial logs go (default: "
                                                  "./jobs/verify-<time>).")] = None,
    json_out: o.Json = False,
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
    from envevo import api

    config = check.check_config()
    if jobs_dir is not None:
        check_output(jobs_dir, "--jobs-dir", folder=True)
    result = run_library(api.verify, tasks, config, jobs_dir=jobs_dir)
    if not result.verdicts:
        print_refused(result.refused, json_out)
    elif json_out:
        # One object per task; the model's usage, which is the whole command's, rides on each as `command_usage`.
        print_json([v.summary() | ({"command_usage": result.usage} if result.usage else {}) for v in result.verdicts]
                   + [refusal(d, why) for d, why in result.refused])
    else:
        print_verdicts(result, config.sandbox.env, config.verification.repeats)
    say_budget_stop(result.budget_stop)
    # A refused task counts as a failed one (exit 1); all refused is exit 2.
    raise typer.Exit(result.exit_code)


def print_verdicts(result: VerifyResult, env: str, repeats: int) -> None:
    """The verdicts as a table on stdout; the notes, the model's usage and the counts on stderr."""
    verdicts, refused = result.verdicts, result.refused
    table = Table(title=f"envevo verify ({env}, oracle ×{repeats}, {result.wall_s:.0f} s)")
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
    for line in dict.fromkeys(n for said in by_task.values() for n in said if n in shared):
        err.print(f"note: {escape(line)}")
    for task, said in by_task.items():
        for line in dict.fromkeys(n for n in said if n not in shared):
            err.print(f"note: {escape(task)}: {escape(line)}")
    print_verifier_usage(result.usage)
    # Inconclusive is counted apart from fail: this host could not run those tasks, which says nothing of them.
    counts = Counter(v.status for v in verdicts)
    err.print(f"{len(verdicts)} task(s): " + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
              + (" (inconclusive: this host could not verify them; see the reasons)" if counts["inconclusive"] else ""))
    err.print(f"trial logs: {result.jobs}")


STATUSES = ("ok", "weak", "inconclusive", "fail")  # best to worst, the order the summary counts them
