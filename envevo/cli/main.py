"""The `envevo` command."""

from __future__ import annotations

import asyncio
import logging
import signal

import typer

from envevo import __version__
from envevo.cli._common import sub_app

app = sub_app("Evolve verifiable RL environments for terminal agents, checked in real sandboxes.", name="envevo")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(f"envevo {__version__}")
        raise typer.Exit()


def _register() -> None:
    from envevo.cli import (
        analyze_cmd,
        audit_cmd,
        difficulty_cmd,
        doctor_cmd,
        evolve_cmd,
        export_cmd,
        harden_cmd,
        lineage_cmd,
        report_cmd,
        review_cmd,
        rollout_cmd,
        rubric_cmd,
        schedule_cmd,
        seed_cmd,
        seeds_cmd,
        verify_cmd,
    )
    from envevo.cli.task_cmd import task_app

    app.command("doctor")(doctor_cmd.doctor)
    app.command("verify")(verify_cmd.verify)
    app.command("audit")(audit_cmd.audit)
    app.command("harden")(harden_cmd.harden)
    app.add_typer(seed_cmd.seed_app, name="seed")
    app.command("evolve")(evolve_cmd.evolve)
    app.command("report")(report_cmd.report)
    app.command("review")(review_cmd.review)
    app.add_typer(rubric_cmd.rubric_app, name="rubric")
    app.command("difficulty")(difficulty_cmd.difficulty)
    app.command("rollout")(rollout_cmd.rollout)
    app.add_typer(seeds_cmd.seeds_app, name="seeds")
    app.add_typer(analyze_cmd.analyze_app, name="analyze")
    app.command("export")(export_cmd.export)
    app.add_typer(lineage_cmd.lineage_app, name="lineage")
    app.add_typer(schedule_cmd.schedule_app, name="schedule")
    app.add_typer(task_app, name="task")
    app.command("serve")(__import__("envevo.cli.serve_cmd", fromlist=["serve"]).serve)


_register()


def _sigterm(_signum, frame):
    # SIGTERM gets the same clean shutdown as Ctrl-C, so sandboxes are torn down: whatever SIGINT does now (asyncio's
    # cancel of the command's main task, or a KeyboardInterrupt outside a loop). A process started with SIGINT
    # ignored (a background job) still stops on SIGTERM.
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        _ignore_interrupts()
        raise KeyboardInterrupt


def _ignore_interrupts() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def _no_reaping_race(record: logging.LogRecord) -> bool:
    # A cancelled subprocess transport polls its child while closing and can reap it before asyncio's watcher does;
    # the watcher then warns that the exit status was already read. In a teardown the status is not used.
    return not str(record.msg).startswith("child process pid %d exit status already read")


def _one_interrupt_is_enough() -> None:
    """Make the first Ctrl-C the only one that counts.

    Inside `asyncio.run`, the first SIGINT cancels the command's main task and the teardown (Harbor's shielded
    sandbox stops, the final cancel of every other task) runs to its end; asyncio turns a second one into a
    KeyboardInterrupt raised wherever the loop is, which cuts that teardown short: 'Task was destroyed but it is
    pending!', a traceback, 'coroutine … stop was never awaited'. So SIGINT and SIGTERM are ignored from the first
    one on. The teardown is bounded (the engine's `rm -f` has a timeout) and the exit sweep removes what is left."""
    on_sigint = getattr(asyncio.Runner, "_on_sigint", None)
    if on_sigint is None or getattr(on_sigint, "_envevo", False):
        return

    def first_only(self, signum, frame, main_task):
        # Ignored from now on (SIGTERM too): Runner.run restores the default handler only if its own is still there.
        _ignore_interrupts()
        logging.getLogger("asyncio").addFilter(_no_reaping_race)
        return on_sigint(self, signum, frame, main_task)

    first_only._envevo = True  # type: ignore[attr-defined]
    asyncio.Runner._on_sigint = first_only  # type: ignore[attr-defined]


def _task_warnings() -> None:
    """A TaskWarning (an unknown key in a task.toml) prints as one `warning: …` line on stderr, each time."""
    import warnings

    from envevo.cli._common import err
    from envevo.task import TaskWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, TaskWarning):
            err.print(f"warning: {message}", highlight=False, markup=False, soft_wrap=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.simplefilter("always", TaskWarning)


def main() -> None:
    signal.signal(signal.SIGTERM, _sigterm)
    _task_warnings()
    _one_interrupt_is_enough()
    app()
