"""Every command's --help prints its help texts whole: bracketed words such as `[metadata.envevo]` or
`[d_θ − d_T]_+` must not be swallowed as Rich markup."""

from __future__ import annotations

import re

import click
import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.main import app

BRACKETED = re.compile(r"\[[^\[\]\n]*\]")


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    for name, sub in (getattr(command, "commands", None) or {}).items():  # typer's groups are not click.Group
        found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))


def _source_help(command: click.Command) -> list[str]:
    texts = [command.help or ""]
    texts += [p.help or "" for p in command.params if isinstance(p, click.Option) and not p.hidden]
    texts += [getattr(p, "help", None) or "" for p in command.params if isinstance(p, click.Argument)]
    return texts


def _squash(text: str) -> str:
    return " ".join(text.split())


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) or "envevo" for p, _ in COMMANDS])
def test_help_prints_every_bracketed_word(path: tuple[str, ...], command: click.Command) -> None:
    shown = _squash(_help(path))
    for text in _source_help(command):
        for bracketed in BRACKETED.findall(text):
            assert _squash(bracketed) in shown, f"{' '.join(path)} --help lost {bracketed!r}"


def test_the_brackets_that_rich_markup_used_to_swallow() -> None:
    shown = _squash(_help(("difficulty",)))
    assert "[metadata.envevo]" in shown
    assert "[d_θ − d_T]_+" in shown
    assert "[llm]" in _squash(_help(("evolve",)))


def test_every_command_is_checked() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"evolve", "difficulty", "lineage show", "schedule simulate", "task import-tb1", "seeds select"} <= names
