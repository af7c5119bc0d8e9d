"""`envevo task …`: content hash, per-component diff, Terminal-Bench 1 import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, err, out, print_json, sub_app, user_errors

task_app = sub_app("Inspect tasks: content hash, per-component diff, TB1 import.", name="task")


@task_app.command("hash")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def hash_cmd(
    task: Annotated[Path, typer.Argument(help="Task dir (Harbor or Terminal-Bench 1).")],
    json_out: o.Json = False,
) -> None:
    """Print the task's content hash: sha256 of every file's path, executable bit and bytes, as saved in current Harbor format.

    --json prints the hash, name, format and file count."""
    from envevo.task import load_task

    t = load_task(task)
    digest = t.content_hash()
    if json_out:
        print_json({"task": str(task), "name": t.name, "format": t.source_format, "hash": digest, "files": len(t.render_files())})
    else:
        typer.echo(digest)


@task_app.command("diff")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def diff_cmd(
    a: Annotated[Path, typer.Argument(help="The old task dir.")],
    b: Annotated[Path, typer.Argument(help="The new task dir.")],
    component: Annotated[list[str], typer.Option("--component", "-c", help="Only this component: instruction, "
                                                 "environment, verification, solution, config (repeatable).")] = [],  # noqa: B006
    json_out: o.Json = False,
) -> None:
    """Show what changed from A to B, per component, then the unified diffs."""
    from envevo.task import check_component, diff_tasks, load_task

    wanted = [check_component(c) for c in component]
    diff = diff_tasks(load_task(a), load_task(b))
    if wanted:
        diff = diff.only(wanted)
    if json_out:
        print_json({"a": str(a), "b": str(b), **diff.model_dump(mode="json")})
        return
    if diff.empty:
        out.print(f"no differences between {a} and {b}" + (f" in {', '.join(wanted)}" if wanted else ""))
        return
    table = Table(title=f"{a} → {b}")
    for col in ("component", "added", "removed", "modified"):
        table.add_column(col, overflow="fold")
    for name, cd in diff.components.items():
        table.add_row(name, "\n".join(cd.added) or "-", "\n".join(cd.removed) or "-", "\n".join(cd.modified) or "-")
    out.print(table)
    for change in diff.changes:
        out.rule(f"{change.kind}: {escape(change.path)} [dim]({change.component})[/]")
        if change.binary or not change.diff.strip():
            out.print(escape(change.diff or "(empty file)"), highlight=False)
        else:
            out.print(Syntax(change.diff, "diff", theme="ansi_dark", word_wrap=True))


@task_app.command("import-tb1")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def import_tb1_cmd(
    src: Annotated[Path, typer.Argument(help="A Terminal-Bench 1 task dir (with task.yaml), or a folder of them.")],
    dest: Annotated[Path, typer.Argument(help="Where the Harbor task goes (for a folder of tasks: the folder that "
                                         "receives them).")],
    force: o.Force = False,
    json_out: o.Json = False,
) -> None:
    """Convert Terminal-Bench 1 tasks to current Harbor tasks (instruction.md, task.toml, environment/, tests/test.sh, solution/solve.sh).

    --json prints the source, destination and hash per task."""
    from envevo.errors import UserError
    from envevo.task import load_task, save, tb1_import_pairs

    pairs = tb1_import_pairs(src, dest)

    results: list[dict[str, str | bool]] = []
    failures: list[dict[str, str | bool]] = []
    for s, d in pairs:
        try:
            task = load_task(s)
            path = save(task, d, overwrite=force)
            results.append({"source": str(s), "dest": str(path), "hash": task.content_hash(), "ok": True})
        except UserError as exc:
            if len(pairs) == 1:
                raise
            failures.append({"source": str(s), "ok": False, "error": str(exc)})
    if json_out:
        print_json(results + failures if len(pairs) > 1 else results[0])
    else:
        for r in results:
            out.print(f"imported {r['source']} → {r['dest']} (hash {str(r['hash'])[:12]})", highlight=False)
        for f in failures:
            err.print(f"[bold red]failed:[/] {f['source']}: {f['error']}", highlight=False)
    if failures:
        raise typer.Exit(1)
