"""`envevo doctor`: check and repair the local sandbox."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from envevo.cli._common import err, out, print_json, user_errors
from envevo.sandbox import Doctor, Status, images_of

_STYLE = {Status.OK: "green", Status.FIXED: "yellow", Status.FAIL: "bold red"}


@user_errors
def doctor(
    fix: bool = typer.Option(False, "--fix", help="Repair what is missing: packages, compose, containers.conf, base images."),
    env: str = typer.Option("podman", "--env", help="Local sandbox engine: podman or docker."),
    tasks: list[Path] = typer.Option([], "--tasks", help="Task dirs whose Dockerfile base images must exist (repeatable)."),
    image: list[str] = typer.Option([], "--image", help="Extra base image that must exist (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Check that envevo can run sandboxes here; with --fix, repair it. Idempotent and fast when healthy."""
    task_dirs = [c for t in tasks for c in ([t] if (t / "environment").is_dir() else sorted(t.iterdir()) if t.is_dir() else [t])]
    images = list(dict.fromkeys([*images_of(task_dirs), *image])) or None
    doc = Doctor(env=env, fix=fix, **({"images": images} if images else {}))
    if not json_out:
        with err.status("checking the sandbox…" if not fix else "checking and repairing the sandbox…"):
            checks = doc.run()
    else:
        checks = doc.run()
    ok = all(c.ok for c in checks)
    if json_out:
        print_json({"ok": ok, "env": env, "checks": [c.model_dump(mode="json") for c in checks]})
    else:
        table = Table(title=f"envevo doctor ({env})", show_lines=False)
        for col in ("check", "status", "detail"):
            table.add_column(col)
        for c in checks:
            table.add_row(c.name, f"[{_STYLE[c.status]}]{c.status.value}[/]", c.detail)
        out.print(table)
        for c in checks:
            if not c.ok:
                err.print(f"[bold red]{c.name}:[/] {c.detail} — fix: [bold]{c.fix}[/]", highlight=False)
    raise typer.Exit(0 if ok else 1)
