"""`envevo audit`: oracle, invalid-test, the red team and the mutation verifier over any Harbor dataset folder or set
of tasks.

Results go to `--out DIR/audit.jsonl`, one line per task keyed by its content hash, appended as each task's
verdict is known; `--resume` skips the tasks already there, so a killed audit of thousands of tasks re-runs only
what was left. All tasks' trials share one bounded pool, and each task's record is written the moment its last trial ends,
so a crash loses only the tasks in flight.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.api import AuditResult, CheckConfig, harden_preview, refusal
from envevo.cli import _options as o
from envevo.cli._common import check_output, err, out, print_json, run_library, user_errors
from envevo.cli._groups import CheckOptions, grouped
from envevo.cli._verdicts import REFUSED, STATUS, print_refused, print_verifier_usage, say_budget_stop
from envevo.errors import UserError
from envevo.verify import AUDIT_RESULTS as RESULTS
from envevo.verify import MUTATION, audit_sarif, fail_on_hits, label_of, record_reasons
from envevo.verify import load_audit_results as load_results
from envevo.verify import summarize_audit as summarize

__all__ = ["RESULTS", "audit", "harden_preview", "load_results", "summarize"]  # the library's names, as tests and scripts import them here


def mutation_cell(rec: dict) -> str:
    """A record's mutation score and survivors, as the audit table shows them: "3/4", "1/2 (survived:
    prefix-3of4)", "no mutants", or "-" (not run, or a record from before the audit ran it)."""
    m = rec.get(MUTATION)
    if not m:
        return "-"
    if not m["run"]:
        return "no mutants"
    text = m["score"] or "0/0"
    notes = ([f"survived: {', '.join(m['survived'])}"] if m["survived"] else []) + (
        [f"{m['inconclusive']} inconclusive"] if m["inconclusive"] else []) + (
        [f"equivalent: {', '.join(m['equivalent'])}"] if m.get("equivalent") else [])
    return text + (f" ({'; '.join(notes)})" if notes else "")


@user_errors
@grouped
def audit(
    tasks: Annotated[list[Path], typer.Argument(help="Harbor dataset folders, task dirs (Harbor or Terminal-Bench 1), "
                                                "or folders of tasks.")],
    *,
    out_dir: Annotated[Path, o.out_option("Where results (audit.jsonl) and trial logs go.")] = Path("audit"),
    resume: Annotated[bool, typer.Option("--resume", help="Skip tasks whose content hash already has a result in "
                                         "--out.")] = False,
    check: CheckOptions,
    json_out: o.Json = False,
    fail_on: Annotated[list[str], typer.Option(
        "--fail-on", metavar="CLASS", help="Exit 1 only if one of these broke some task (repeat, or comma-separate): "
        "an exploit (reward_forgery, answer_flooding, …), oracle, invalid_test, red_team (any exploit), mutation "
        "(any surviving mutant) or a class as listed (mutant:wrong). Default: any failure.")] = [],  # noqa: B006
    sarif: Annotated[Path | None, typer.Option(
        "--sarif", metavar="FILE", help="Also write the findings as SARIF 2.1.0 (one result per finding; rule = "
        "verifier/exploit class; level error for broke/failed, warning for inconclusive or a false fail).")] = None,
    harden_dir: Annotated[Path | None, typer.Option(
        "--harden", metavar="DIR", help="Also write a hardened copy of each task harden would fix into DIR, proved as "
        "`envevo harden` proves it (the audit's verdict is its before side: the task is not verified twice). Needs "
        "the red team; with --resume, DIR may hold this audit's earlier copies.")] = None,
) -> None:
    """Audit tasks for soundness and reward hacks: per task, which verifier failed, which exploit broke it, and its
    mutation score (near-miss solutions killed of those run) with the surviving mutants by name. The red team's LLM
    hacker and --model-mutants use --model (else the judge's model of --config's [llm]).

    A task whose tests miss a near miss that changes its end state is weak, not fail (unless --mutation strict).

    --json prints {tasks: [...], summary: {...}, results: PATH, usage: [...]}; a task's status is ok, weak,
    inconclusive or fail, and its mutation entry lists the survivors and the equivalent mutants.

    A task that cannot be loaded or run as given (a malformed task.toml, a compose file that mounts the host) is
    refused with its one line, in the table and in --json's `refused`; the others are audited.

    Each task's row says what `envevo harden` would fix (tests to a separate verifier, artifacts, test-time
    downloads) or why it cannot (a test that asks a served port; a lenient grader), read from its files.

    Exit code: 0 every task ok; 1 some task fails (a refused task counts as failed); 3 none fails but some verdict is
    inconclusive (this host could not run it); 4 none fails nor is inconclusive but some task is weak (its tests miss
    a near miss); 2 bad input, or every task refused."""
    from envevo import api

    config = check.check_config()
    wanted = check_fail_on(fail_on)
    check_output(out_dir.resolve(), "--out", folder=True)
    result = run_library(api.audit, tasks, config, out_dir=out_dir, resume=resume, harden_dir=harden_dir)
    if not result.ran:
        print_refused(result.refused, json_out)
        raise typer.Exit(result.exit_code)
    print_audit(result, config, json_out)
    say_budget_stop(result.budget_stop)
    if sarif is not None:
        write_sarif(sarif, audit_sarif(result.records))
        err.print(f"SARIF: {sarif}")
    raise typer.Exit(fail_on_exit(result, wanted) if wanted else result.exit_code)


def print_audit(result: AuditResult, config: CheckConfig, json_out: bool) -> None:
    """The records as --json's document, or as a table on stdout with the summary (usage and paths on stderr)."""
    records, summary, previews, hardened = result.records, result.summary, result.previews, result.hardened
    if json_out:
        print_json({"tasks": [{k: r[k] for k in ("task", "hash", "source", "status", "broken_by", "hackable")}
                              | {MUTATION: r.get(MUTATION), "reasons": record_reasons(r), "harden": previews[r["hash"]]}
                              | ({"hardened": hardened[r["hash"]]} if r["hash"] in hardened else {}) for r in records],
                    "summary": summary, "results": str(result.results), "usage": result.usage,
                    "refused": [refusal(d, why) for d, why in result.refused]})
        return
    v = config.verification
    table = Table(title=f"envevo audit ({config.sandbox.env}, red team {v.red_team}, mutation {v.mutation}, "
                        f"{len(records)} task(s), {result.wall_s:.0f} s)")
    for col in ("task", "status", "broken by", label_of(MUTATION), "first reason", "harden"):
        table.add_column(col, overflow="fold")
    for r in records:
        reasons = record_reasons(r)
        table.add_row(r["task"], STATUS[r["status"]], escape(", ".join(r["broken_by"])) or "-",
                      escape(mutation_cell(r)),
                      escape(reasons[0].splitlines()[0]) if reasons else "-", escape(previews[r["hash"]]))
    for d, why in result.refused:
        table.add_row(escape(d.name), REFUSED, "-", "-", escape(why.splitlines()[0]), "-")
    out.print(table)
    classes = ", ".join(f"{k} {n}" for k, n in summary["failure_classes"].items()) or "none"
    statuses = ", ".join(f"{n} {s}" for s, n in summary["status"].items())
    out.print(f"{summary['tasks']} task(s): {statuses}; failure classes: {classes}; "
              f"hackable {summary['hackable']}/{summary['tasks']} ({100 * summary['hackable_fraction']:.0f}%); "
              f"surviving mutants in {summary['mutant_survived']}/{summary['mutation_scored']} scored task(s)"
              + (f" (mutation score {summary['mutation_score']})" if summary["mutation_score"] else ""))
    print_verifier_usage(result.usage)
    err.print(f"results: {result.results}")


def fail_on_exit(result: AuditResult, wanted: list[str]) -> int:
    """--fail-on: 1 if one of the wanted classes broke some task (said on stderr), else 0."""
    hits = {c for r in result.records for c in fail_on_hits(r, wanted)}
    if hits:
        err.print(f"--fail-on: {', '.join(sorted(hits))} broke some task")
    return 1 if hits else 0


def check_fail_on(values: list[str]) -> list[str]:
    """The classes `--fail-on` names (repeated or comma-separated), each known; one line naming the bad one else."""
    from envevo.verify import VERIFIER_CLASSES
    from envevo.verify.exploits import exploit_names

    wanted = [v.strip() for value in values for v in value.split(",") if v.strip()]
    known = set(exploit_names()) | set(VERIFIER_CLASSES)
    for w in wanted:
        kind, _, name = w.partition(":")
        if not (w in known or (kind == "exploit" and name in known) or (kind == "mutant" and name in ("prefix", "wrong", "skip"))):
            raise UserError(f"--fail-on {w!r}: not an exploit or verifier class; use one of "
                            f"{', '.join(sorted(known))}, or mutant:prefix|wrong|skip")
    return wanted


def write_sarif(path: Path, doc: dict) -> None:
    """Write the SARIF log whole (a temp file renamed), so a crash never leaves half a file a CI job would read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    tmp.replace(path)
