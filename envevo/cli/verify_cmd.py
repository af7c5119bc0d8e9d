"""`envevo verify`: run the oracle and invalid-test verifiers on tasks in real sandboxes."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path

import typer
from rich.table import Table

from envevo.cli._common import err, out, print_json, progress, user_errors
from envevo.errors import UserError


def preflight(env: str) -> None:
    """Fail in one line before any work: an unknown --env, or a local engine that is clearly unusable."""
    import shutil

    from envevo.runtime import check_env
    from envevo.sandbox import activate

    activate()
    try:
        engine = check_env(env)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if engine and shutil.which(engine) is None:
        raise UserError(f"{engine} is not installed: run 'envevo doctor --fix --env {engine}'")
    if engine:
        from envevo.runtime import sweep_orphans

        sweep_orphans(engine)  # sandboxes left by a killed envevo process on this host
        _image_budget(engine)


def _image_budget(engine: str, every_sec: float = 600) -> None:
    """Keep envevo's image cache under its budget (oldest first); measured at most every 10 minutes (~1 s)."""
    import time

    from envevo.sandbox import enforce_budget, home

    stamp = home() / "image-budget.stamp"
    if stamp.is_file() and time.time() - stamp.stat().st_mtime < every_sec:
        return
    result = enforce_budget(engine)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()
    if result.removed:
        err.print(f"image budget: removed {len(result.removed)} cached image(s), "
                  f"{result.bytes_before / 1e9:.1f} → {result.bytes_after / 1e9:.1f} GB (envevo doctor --prune to trim more)")


@user_errors
def verify(
    tasks: list[Path] = typer.Argument(..., help="Task dirs (Harbor or Terminal-Bench 1), or folders of tasks."),
    env: str = typer.Option("podman", "--env", help="podman or docker (envevo's local sandbox), harbor:podman for Harbor's own, a cloud environment (daytona, modal, e2b, …) or pkg.mod:Class."),
    repeats: int = typer.Option(2, "--repeats", min=1, help="Oracle runs per task; all must reach reward 1.0."),
    concurrency: int = typer.Option(3, "--concurrency", min=1, help="Trials running at once."),
    image_map: list[str] = typer.Option([], "--image-map", help="Rewrite a base image, e.g. ubuntu:24.04=registry.local/ubuntu:24.04 (repeatable)."),
    config: Path | None = typer.Option(None, "--config", help="envevo.toml with an [images] table (default: ./envevo.toml if present)."),
    jobs_dir: Path | None = typer.Option(None, "--jobs-dir", help="Where trial logs go (default: ./jobs/verify-<time>)."),
    red_team: str = typer.Option("off", "--red-team", help="Exploit agents (reward forgery, runner hijack, tool shadowing, output guessing, peeking) must all score 0: on, off, or sample:N."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON list, one object per task."),
) -> None:
    """Check each task in real containers: the reference solution passes (oracle), an empty one fails (invalid-test), and, with --red-team, no exploit passes."""
    from envevo.task import expand_task_dirs, load_image_map, load_task, prepare_runnable
    from envevo.verify import default_verifiers, verify_tasks

    from envevo.verify import parse_red_team

    try:
        parse_red_team(red_team)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    preflight(env)
    mapping = load_image_map(image_map, config)
    task_dirs = expand_task_dirs(tasks)
    loaded = [load_task(p) for p in task_dirs]  # every task is validated before any container starts
    names = [t.name for t in loaded]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise UserError(f"two tasks are named {dup!r}; verify them in separate runs")
    jobs = (jobs_dir or Path("jobs") / f"verify-{datetime.now():%Y%m%d-%H%M%S}").resolve()
    jobs.mkdir(parents=True, exist_ok=True)
    # TB1 tasks and image maps need a converted copy; Harbor tasks without a map run in place.
    # Local engines: digest-pinned / mirror-prefixed references go to local stand-ins, each stated.
    from envevo.sandbox import standins_for

    engine = env.removeprefix("harbor:")
    standins = {t.name: standins_for(t, engine) for t in loaded} if engine in ("podman", "docker") else {}
    runnable = [(t.name, prepare_runnable(t, standins[t.name][0].merged(mapping) if standins else mapping, jobs / "_tasks"))
                for t in loaded]

    verifiers = default_verifiers(repeats, red_team=red_team)
    total = sum(len(v.trial_specs(d, env, jobs / n)) for n, d in runnable for v in verifiers)
    t0 = time.monotonic()
    with progress(f"verifying {len(runnable)} task(s)", total) as advance:
        verdicts = asyncio.run(
            verify_tasks(
                runnable, jobs, env=env, verifiers=verifiers, concurrency=concurrency,
                on_trial_done=lambda o: advance(f"{o.task} {o.agent} → {o.reward if o.reward is not None else o.error_kind.value}"),
            )
        )
    wall = time.monotonic() - t0
    originals = {t.name: t.source for t in loaded}
    for v in verdicts:
        v.substitutions = standins[v.task][1] if v.task in standins else []
        if originals.get(v.task) and v.task_dir != originals[v.task]:
            # Fixes name the user's task dir, not the converted copy the trials ran.
            for rep in v.reports.values():
                rep.reasons = [r.replace(f"--tasks {v.task_dir}", f"--tasks {originals[v.task]}") for r in rep.reasons]

    if json_out:
        print_json([v.summary() for v in verdicts])
    else:
        from rich.markup import escape

        table = Table(title=f"envevo verify ({env}, oracle ×{repeats}, {wall:.0f} s)")
        cols = ["task", "status", "oracle", "invalid-test"] + (["red team"] if "red_team" in verdicts[0].reports else []) + ["reasons"]
        for col in cols:
            table.add_column(col, overflow="fold")
        status = {"ok": "[green]ok[/]", "fail": "[bold red]FAIL[/]", "inconclusive": "[yellow]inconclusive[/]"}

        def mark(rep) -> str:  # one verifier: pass, FAIL, or inconclusive (no evidence either way)
            return "[green]pass[/]" if rep.passed else status["inconclusive" if rep.inconclusive else "fail"]

        for v in verdicts:
            notes = [f"substituted: {s}" for s in v.substitutions] + v.reasons
            marks = [mark(v.reports["oracle"]), mark(v.reports["invalid_test"])]
            if "red_team" in v.reports:
                marks.append(mark(v.reports["red_team"]))
            table.add_row(v.task, status[v.status], *marks, escape("\n".join(notes)) or "-")
        out.print(table)
        err.print(f"trial logs: {jobs}")
    raise typer.Exit(0 if all(v.ok for v in verdicts) else 1)
