"""`envevo harden`: write a hardened copy of each task (tests in a separate verifier, artifacts inferred and proved,
test-time downloads at build time), with the proof before and after."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import err, note, out, print_json, progress, user_errors
from envevo.cli._groups import TrialOptions, built, grouped
from envevo.verify import MUTATION, RED_TEAM, label_of

_STATUS = {"hardened": "[green]hardened[/]", "unchanged": "[green]unchanged[/]",
           "not hardened": "[bold red]not hardened[/]", "inconclusive": "[yellow]inconclusive[/]"}


def _side(side) -> list[str]:
    if side is None:
        return ["-", "-", "-"]
    verifies = {True: "yes", False: "no", None: "?"}[side.verifies]
    return [verifies, side.red_team, side.mutation]


@user_errors(interrupted="interrupted: sandboxes were torn down and no half-written copy was left in --out; re-run "
                         "the command (with --overwrite) to continue")
@grouped
def harden(
    tasks: o.TaskDirs,
    *,
    out_dir: Annotated[Path, o.out_option("Folder to write the hardened tasks into, one dir per task; refused if it "
                                          "exists, unless --overwrite and a previous harden wrote it.")],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a previous harden output in --out (only the "
                                            "task dirs it wrote).")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Show each task's changes as a unified diff.")] = False,
    sandbox: TrialOptions,
    repeats: o.Repeats = o.REPEATS,
    mutation: o.Mutation = o.MUTATION,
    jobs_dir: Annotated[Path | None, typer.Option("--jobs-dir", help="Where trial logs go (default: "
                                                  "./jobs/harden-<time>).")] = None,
    json_out: o.Json = False,
) -> None:
    """Write a hardened copy of each task, safe to train on and proved before it is written (docs/trust.md#harden).

    The tests move to a separate verifier (Harbor's
    environment_mode = "separate", built from the task's own environment), the files the reference solution leaves
    that the tests read are declared as artifacts (the smallest set, each with why), and what test.sh downloads
    while grading is installed at build time so the verifier runs offline. Each copy is proved before it is written:
    oracle passes, nop fails, every red-team exploit scores 0, and the mutation score, before and after. A test that
    asks a running process (a served port, a daemon) cannot move: the task is reported hackable, with the evidence
    and the smallest rewrite. Exit 0: all hardened or unchanged; 1: some not hardened; 3: some inconclusive."""
    from envevo import api

    config = api.CheckConfig(sandbox=sandbox.sandbox_config(),
                             verification=built(api.VerificationConfig, repeats=repeats, mutation=mutation))
    run = asyncio.run(api.harden(tasks, config, out_dir=out_dir, overwrite=overwrite, jobs_dir=jobs_dir, notify=note,
                                 progress=progress))
    if json_out:
        print_json([r.model_dump(mode="json", exclude=None if diff else {"diff"}) for r in run.results])
    else:
        _print_table(run.results, config.sandbox.env)
        if diff:
            for r in run.results:
                if r.diff:
                    out.rule(escape(r.task))
                    out.print(escape(r.diff), highlight=False)
        err.print(f"trial logs: {run.jobs}")
    raise typer.Exit(run.exit_code)


def _print_table(results, env: str) -> None:
    table = Table(title=f"envevo harden ({env})")
    checks = (label_of(RED_TEAM), label_of(MUTATION))
    for col in ("task", "before: verifies", *checks, "after: verifies", *checks,
                "artifacts", "status"):
        table.add_column(col, overflow="fold")
    for r in results:
        arts = "\n".join(a.path for a in r.artifacts) or "-"
        status = _STATUS[r.status] + (f"\n{escape(r.reason)}" if r.reason else "")
        table.add_row(escape(r.task), *_side(r.before), *_side(r.after), escape(arts), status)
    out.print(table)
    for r in results:
        for a in r.artifacts:
            err.print(f"{escape(r.task)}: artifact {escape(a.path)}: {escape(a.why)}", highlight=False)
        for c in r.cannot_move:
            err.print(f"{escape(r.task)}: cannot move: {escape(c)}", highlight=False)
        for p in r.live_state:
            err.print(f"{escape(r.task)}: {escape(p.file)}:{p.line} asks {escape(p.what)}: {escape(p.text)}",
                      highlight=False)
        if r.suggestion:
            err.print(f"{escape(r.task)}: suggested rewrite: {escape(r.suggestion)}", highlight=False)
        if r.out:
            err.print(f"{escape(r.task)}: written to {escape(r.out)}", highlight=False)
