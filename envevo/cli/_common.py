"""Shared CLI plumbing: consoles, JSON output, one-line errors, progress bars."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

out = Console()
err = Console(stderr=True)


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

    from envevo.errors import UserError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            _quiet_closed_loop_noise()
            err.print("interrupted: sandboxes were torn down; re-run the command to continue")
            raise typer.Exit(130)

    return wrapper


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
