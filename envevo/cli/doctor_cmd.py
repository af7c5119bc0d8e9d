"""`envevo doctor`: check and repair the local sandbox; stand-ins, host-CA trust and the image budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import err, out, print_json, user_errors
from envevo.errors import UserError
from envevo.runtime import DEFAULT_ENGINE, LOCAL_ENGINES
from envevo.sandbox import Doctor, Status, image_users, images_of, substitutions
from envevo.task import existing_task_dirs

_STYLE = {Status.OK: "green", Status.FIXED: "yellow", Status.WARN: "yellow", Status.FAIL: "bold red"}


@user_errors
def doctor(
    fix: Annotated[bool, typer.Option("--fix", help="Repair what is missing: packages, compose, containers.conf, base "
                                      "images and stand-ins, and the network-cut helper image of verifiers' "
                                      "runtime (prime-rl).")] = False,
    env: Annotated[str, typer.Option("--env", help="Local sandbox engine: podman, docker, or bwrap (podman's images).")] = DEFAULT_ENGINE,
    tasks: Annotated[list[Path], typer.Option("--tasks", help="Task dirs (Harbor or Terminal-Bench 1) or folders of "
                                              "tasks whose base images must exist (repeatable).")] = [],  # noqa: B006
    image: Annotated[list[str], typer.Option("--image", help="Extra base image that must exist "
                                             "(repeatable).")] = [],  # noqa: B006
    trust_host_ca: Annotated[bool | None, typer.Option("--trust-host-ca/--no-trust-host-ca", help="Behind a "
                                                       "TLS-intercepting proxy: let builds and containers trust the "
                                                       "host's CA bundle (--fix does when the bundle verifies the proxy), "
                                                       "or stop (kept off).")] = None,
    prune: Annotated[bool, typer.Option("--prune", help="Remove envevo's cache images (oldest first) and dangling "
                                        "build leftovers, then exit.")] = False,
    older_than: Annotated[float | None, typer.Option("--older-than", min=0, help="With --prune: only cache images "
                                                     "built more than DAYS ago.")] = None,
    max_gb: Annotated[float | None, typer.Option("--max-gb", min=0, help="With --prune: remove the oldest cache "
                                                 "images until image storage is under G GB.")] = None,
    prune_standins: Annotated[bool, typer.Option("--prune-standins", help="With --prune: stand-in images may go "
                                                 "too.")] = False,
    json_out: o.Json = False,
) -> None:
    """Check that envevo can run sandboxes here; with --fix, repair it. Idempotent and fast when healthy."""
    if prune:
        _prune(env, older_than, max_gb, prune_standins, json_out)
        return
    if older_than is not None or max_gb is not None or prune_standins:
        raise UserError("--older-than, --max-gb and --prune-standins go with --prune")
    task_dirs = existing_task_dirs(tasks)
    # None of them: Doctor probes its default images.
    images = list(dict.fromkeys([*images_of(task_dirs), *image]))
    users = image_users(task_dirs)  # a base image that cannot be provided names the tasks that need it
    if not json_out:
        with err.status("checking the sandbox…" if not fix else "checking and repairing the sandbox…") as status:
            doc = Doctor(env=env, fix=fix, trust_host_ca=trust_host_ca, progress=lambda m: status.update(m), images=images,
                         users=users)
            checks = doc.run()
    else:
        checks = Doctor(env=env, fix=fix, trust_host_ca=trust_host_ca, images=images, users=users).run()
    ok = all(c.ok for c in checks)
    # What runs as what, stated for every task whose images are there, even when others' are not.
    ready = any(c.name == "container start" and c.ok for c in checks)
    subs = substitutions(task_dirs, env) if ready and task_dirs else {}
    if json_out:
        print_json({"ok": ok, "env": env, "checks": [c.model_dump(mode="json") for c in checks], "substitutions": subs})
    else:
        _print_checks(checks, subs, env)
    raise typer.Exit(0 if ok else 1)


def _print_checks(checks, subs: dict[str, list[str]], env: str) -> None:
    """The checks as a table, each task's substitutions under it, and each failing check's fix on stderr."""
    table = Table(title=f"envevo doctor ({env})", show_lines=False)
    for col in ("check", "status", "detail"):
        table.add_column(col)
    for c in checks:
        table.add_row(c.name, f"[{_STYLE[c.status]}]{c.status.value}[/]", c.detail, style=None)
    out.print(table, markup=True)
    for task, lines in subs.items():
        for line in lines:
            out.print(f"{task}: {line}", markup=False, highlight=False)
    for c in checks:
        if c.status in (Status.FAIL, Status.WARN) and c.fix:
            err.print(f"[bold red]{c.name}:[/] ", end="", highlight=False)
            err.print(f"{c.detail} — fix: {c.fix}", markup=False, highlight=False)


def _prune(env: str, older_than: float | None, max_gb: float | None, standins: bool, json_out: bool) -> None:
    import shutil

    from envevo.sandbox import activate, prune

    activate()
    if env not in LOCAL_ENGINES or shutil.which(env) is None:
        raise UserError(f"--prune needs a local engine; {env} is not installed (envevo doctor --fix --env {env})")
    if json_out:
        result = prune(env, older_than_days=older_than, max_gb=max_gb, include_standins=standins)
        print_json(result.model_dump(mode="json"))
    else:
        with err.status("removing cache images…"):
            result = prune(env, older_than_days=older_than, max_gb=max_gb, include_standins=standins)
        out.print(result.summary(), markup=False)
        for e in result.errors:
            err.print(f"not removed: {e}", markup=False)
    raise typer.Exit(0)
