"""Shared CLI plumbing: typer apps, consoles, JSON output, one-line errors, progress bars, small checks."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Coroutine
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envevo.api import verdicts_exit_code  # noqa: F401 (the exit code of every verifying command, re-exported here)
from envevo.errors import UserError

out = Console()
err = Console(stderr=True)


def sub_app(help: str, **kwargs: Any):  # noqa: A002 (typer's own name)
    """A typer app as every envevo command group has it. Help is printed without Rich markup, which would
    swallow bracketed words such as `[metadata.envevo]` or `[d_θ − d_T]_+`."""
    import typer

    return typer.Typer(help=help, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                       rich_markup_mode=None, **kwargs)


def fmt(x: float | None, spec: str = ".2f") -> str:
    """A number for a table cell; '-' when there is none."""
    return "-" if x is None else format(x, spec)


def usage_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Tokens and cost per role and model; '-' where a count is unknown; calls whose tokens were estimated (answers
    abandoned at their wall-clock cap) are said so."""
    usage = Table(title=escape(title), title_justify="left")
    for col in ("role", "model", "calls", "input tokens", "output tokens", "cost USD"):
        usage.add_column(col, justify="left" if col in ("role", "model") else "right")
    for u in rows:
        calls = str(u["calls"]) + (f" ({n} estimated)" if (n := u.get("estimated_calls")) else "")
        usage.add_row(escape(u["role"]), escape(u["model"] or "-"), calls, fmt(u["input_tokens"], "d"),
                      fmt(u["output_tokens"], "d"), fmt(u["cost_usd"], ".4f"))
    return usage


def is_run_dir(path: Path) -> bool:
    """Whether `path` is a run dir (the --run of `envevo evolve`): it holds a lineage store."""
    from envevo.store import RunPaths

    return RunPaths(run_dir=path).db.is_file()


def require_runs(runs: list[Path]) -> None:
    for run in runs:
        if not is_run_dir(run):
            from envevo.store import RunPaths

            raise UserError(f"{run} is not a run dir (no {RunPaths(run_dir=run).db.name}); "
                            "pass the run dir of `envevo evolve --run`")


def check_output(path: Path, flag: str, *, folder: bool) -> None:
    """An output path the command will write (a folder, or a file when not `folder`), checked before any work: one
    line if it is of the other kind, lies under a file or a missing folder (a file's), or cannot be written."""
    import os

    path = Path(path).expanduser().absolute()
    if path.exists() and path.is_dir() != folder:
        raise UserError(f"{flag} {path} is a {'file' if folder else 'folder'}; give a {'folder' if folder else 'file'} "
                        "path")
    if not folder and not path.parent.is_dir():
        raise UserError(f"{flag} {path}: the folder {path.parent} does not exist; create it, or choose another path")
    nearest = path if path.exists() else path.parent
    while not nearest.exists():
        nearest = nearest.parent
    if not nearest.is_dir():
        raise UserError(f"{flag} {path}: {nearest} is a file, not a folder; choose another path")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path}: {nearest} is not writable (read-only or not yours); choose another path")


def check_output_dir(path: Path, flag: str) -> None:
    check_output(path, flag, folder=True)


#: The release that drops the old spellings kept in 0.1 (two minor releases: scripts get one to move).
REMOVED_IN = "0.3"


def deprecated_flag(old: str, new: str, removed_in: str) -> None:
    """One line on stderr for a flag kept so that scripts go on working, naming the release that removes it."""
    err.print(f"warning: {old} is deprecated and will be removed in envevo {removed_in}; use {new}", highlight=False,
              markup=False, soft_wrap=True)


def renamed[T](old_value: T | None, new_value: T, old: str, new: str, removed_in: str = REMOVED_IN,
               unset: T | None = None) -> T:
    """The value of a renamed option: the new spelling's, or the old one's with a deprecation line. Both at once
    is a user error, since which one wins would be a guess. `unset`: the new spelling's value when not given (its
    default, for an option that has one)."""
    if old_value is None:
        return new_value
    if new_value != unset:
        raise UserError(f"{old} is the old spelling of {new}: give only {new}")
    deprecated_flag(old, new, removed_in)
    return old_value


def pass_env(names: list[str], config: Path | None) -> None:
    """The host variables tasks may read: --pass-env, plus [sandbox] pass_env of envevo.toml (--config, else
    ./envevo.toml if present). No other reaches a task (envevo.task._host_env)."""
    from envevo.task import DEFAULT_CONFIG_FILE, pass_env_in_config, pass_host_env

    if config is None and Path(DEFAULT_CONFIG_FILE).is_file():
        config = Path(DEFAULT_CONFIG_FILE)
    pass_host_env([*names, *pass_env_in_config(config)])


def run_library[R](call: Callable[..., Coroutine[object, object, R]], /, *args: object, **kwargs: object) -> R:
    """The command's one `asyncio.run`: an `envevo.api` entry point, its notes and progress on stderr."""
    import asyncio

    return asyncio.run(call(*args, notify=note, progress=progress, **kwargs))


def note(line: str) -> None:
    """A line of the library's (a note, a resume's change), as written: on stderr, no markup, no highlighting."""
    err.print(line, highlight=False, markup=False, soft_wrap=True)


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


#: Seconds between plain progress lines (stderr not a terminal): often enough to tell a working run from a hang,
#: rarely enough that a log of a long run stays readable.
PLAIN_EVERY = 5.0


class PlainProgress:
    """Progress as plain lines on stderr when it is not a terminal (nohup, CI, a pipe), where a live bar shows nothing
    until the end. Each key (a lineage, or the one bar) holds its latest line; a line is printed when it changed, at
    most once per PLAIN_EVERY seconds for all keys; `flush` prints what is still held (the final state)."""

    def __init__(self, every: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.every = PLAIN_EVERY if every is None else every
        self._clock = clock
        self._start = clock()
        self._last: float | None = None
        self._held: dict[str, str] = {}
        self._said: dict[str, str] = {}

    def update(self, key: str, line: str) -> None:
        if self._said.get(key) == line:
            self._held.pop(key, None)
        else:
            self._held[key] = line
        if self._held and (self._last is None or self._clock() - self._last >= self.every):
            self.flush()

    def flush(self) -> None:
        elapsed = self._clock() - self._start
        for key, line in self._held.items():
            err.print(f"{line} ({elapsed:.0f}s)", highlight=False, markup=False, soft_wrap=True, emoji=False)
            self._said[key] = line
        self._held.clear()
        self._last = self._clock()


def plain() -> PlainProgress | None:
    """Plain progress lines when stderr is not a terminal; None when a live bar can be drawn."""
    return None if err.is_terminal else PlainProgress()


@contextmanager
def progress(description: str, total: int):
    """A progress bar on stderr, so --json on stdout stays clean; plain lines when stderr is not a terminal."""
    lines = plain()
    if lines is not None:
        done = 0

        def step(last: str = "") -> None:
            nonlocal done
            done += 1
            lines.update("", f"{description}: {done}/{total}" + (f" {last}" if last else ""))

        lines.update("", f"{description}: 0/{total}")
        try:
            yield step
        finally:
            lines.flush()
        return
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


#: What Ctrl-C leaves, said after it. Commands that start sandboxes and record each result as it comes resume by
#: running again; others name their own (`user_errors(interrupted=…)`).
INTERRUPTED = "interrupted: sandboxes were torn down; re-run the command to continue"
INTERRUPTED_NO_SANDBOX = "interrupted: no sandbox was started; re-run the command to start over"


def user_errors(fn=None, *, interrupted: str = INTERRUPTED):
    """Wrap a command so user errors end in one line (exit 2) and Ctrl-C in a clean exit 130, with the line
    `interrupted` that says what is left and how to go on."""
    import functools

    import typer

    if fn is None:
        return functools.partial(user_errors, interrupted=interrupted)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            fail(str(exc))
        except OSError as exc:
            if exc.errno not in _MACHINE_ERRNOS:
                raise
            fail(_os_line(exc))
        except KeyboardInterrupt:
            _ignore_further_interrupts()
            _quiet_closed_loop_noise()
            err.print(interrupted, highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130) from None

    return wrapper


def _machine_errnos() -> frozenset[int]:
    import errno

    return frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR})


#: OSErrors that say what the machine or a path is, not what envevo did wrong: one line, never a traceback.
_MACHINE_ERRNOS = _machine_errnos()


def _os_line(exc: OSError) -> str:
    import errno

    where = f" {exc.filename}" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"the disk is full (writing{where}); what was committed is kept: free space, then run the command "
                "again (evolve: with --resume)")
    return f"cannot use{where}: {exc.strerror or exc}; choose another path, or fix the path or its permissions"


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
