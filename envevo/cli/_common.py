"""Shared CLI plumbing: typer apps, consoles, JSON output, one-line errors, progress bars, small checks."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from envevo.errors import UserError

out = Console()
err = Console(stderr=True)


def sub_app(help: str, **kwargs: Any):  # noqa: A002 (typer's own name)
    """A typer app as every envevo command group has it. Help is printed without Rich markup, which would
    swallow bracketed words such as `[metadata.envevo]` or `[d_θ − d_T]_+`."""
    import typer

    return typer.Typer(help=help, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                       rich_markup_mode=None, **kwargs)


#: A verdict's status, and one verifier's mark: pass, FAIL, or inconclusive (no evidence either way).
STATUS = {"ok": "[green]ok[/]", "fail": "[bold red]FAIL[/]", "inconclusive": "[yellow]inconclusive[/]"}


def verifier_mark(report) -> str:
    return "[green]pass[/]" if report.passed else STATUS["inconclusive" if report.inconclusive else "fail"]


def fmt(x: float | None, spec: str = ".2f") -> str:
    """A number for a table cell; '-' when there is none."""
    return "-" if x is None else format(x, spec)


def is_run_dir(path: Path) -> bool:
    """Whether `path` is a run dir (the --out of `envevo evolve`): it holds a lineage store."""
    from envevo.store import RunPaths

    return RunPaths(run_dir=path).db.is_file()


def require_runs(runs: list[Path]) -> None:
    for run in runs:
        if not is_run_dir(run):
            from envevo.store import RunPaths

            raise UserError(f"{run} is not a run dir (no {RunPaths(run_dir=run).db.name}); "
                            "pass the --out dir of `envevo evolve`")


def check_red_team(text: str) -> None:
    """--red-team on, off or sample:N, checked before any work."""
    from envevo.verify import parse_red_team

    try:
        parse_red_team(text)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def deprecated_flag(old: str, new: str) -> None:
    """One line on stderr for a flag kept so that scripts go on working."""
    err.print(f"warning: {old} is deprecated; use {new}", highlight=False, markup=False, soft_wrap=True)


def preflight(env: str) -> None:
    """The sandbox preflight, its notes on stderr."""
    from envevo.sandbox import preflight as check

    check(env, notify=lambda line: err.print(line, highlight=False, markup=False))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def fail(message: str, code: int = 2) -> None:
    """End the command with one line on stderr; never a traceback for errors a user can fix."""
    import typer

    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True, emoji=False)
    raise typer.Exit(code)


@contextmanager
def progress(description: str, total: int):
    """A progress bar on stderr, so --json on stdout stays clean."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=err,
        transient=False,
    )
    with bar:
        task_id = bar.add_task(description, total=total, last="")

        def advance(last: str = "") -> None:
            bar.update(task_id, advance=1, last=last)

        yield advance


def user_errors(fn):
    """Wrap a command so user errors end in one line (exit 2) and Ctrl-C in a clean exit 130."""
    import functools

    import typer

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            _ignore_further_interrupts()
            _quiet_closed_loop_noise()
            err.print("interrupted: sandboxes were torn down; re-run the command to continue")
            raise typer.Exit(130) from None

    return wrapper


def _ignore_further_interrupts() -> None:
    """One Ctrl-C is enough: another one (or a SIGTERM) must not cut short the exit sweep of sandboxes (atexit)
    with a traceback."""
    import signal

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass


def _quiet_closed_loop_noise() -> None:
    """After Ctrl-C, asyncio subprocess transports can be collected once their loop is closed, and Python
    prints an 'Exception ignored … Event loop is closed' traceback for each. The sandboxes are already torn
    down by then; silence only that message."""
    import sys

    default = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_value, RuntimeError) and "Event loop is closed" in str(unraisable.exc_value):
            return
        default(unraisable)

    sys.unraisablehook = hook
