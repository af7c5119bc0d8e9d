"""The `envevo` command."""

from __future__ import annotations

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
        lineage_cmd,
        review_cmd,
        rollout_cmd,
        schedule_cmd,
        seed_cmd,
        verify_cmd,
    )
    from envevo.cli.task_cmd import task_app

    app.command("doctor")(doctor_cmd.doctor)
    app.command("verify")(verify_cmd.verify)
    app.command("audit")(audit_cmd.audit)
    app.add_typer(seed_cmd.seed_app, name="seed")
    app.command("evolve")(evolve_cmd.evolve)
    app.command("report")(evolve_cmd.report)
    app.command("review")(review_cmd.review)
    app.add_typer(review_cmd.rubric_app, name="rubric")
    app.command("difficulty")(difficulty_cmd.difficulty)
    app.command("rollout")(rollout_cmd.rollout)
    seeds_app = sub_app("Select seed tasks: hard for an agent, sound by the verifiers; or draw a balanced pool.")
    seeds_app.command("select")(rollout_cmd.select)
    seeds_app.command("pool")(seed_cmd.pool)
    app.add_typer(seeds_app, name="seeds")
    app.add_typer(analyze_cmd.analyze_app, name="analyze")
    app.command("export")(lineage_cmd.export)
    app.add_typer(lineage_cmd.lineage_app, name="lineage")
    app.add_typer(schedule_cmd.schedule_app, name="schedule")
    app.add_typer(task_app, name="task")


_register()


def _sigterm(_signum, _frame):
    # SIGTERM gets the same clean shutdown as Ctrl-C, so sandboxes are torn down.
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _sigterm)
    app()
