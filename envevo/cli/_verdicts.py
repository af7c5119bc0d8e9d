"""How the commands that verify tasks (`verify`, `audit`, `seeds select`) show verdicts: a status, a verifier's
mark, a task refused before any container started, and what their verifiers' model cost."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from envevo.api import refusal
from envevo.cli._common import err, print_json, usage_table

if TYPE_CHECKING:
    from envevo.verify import VerifierReport

#: A verdict's status, and one verifier's mark: pass, FAIL, or inconclusive (no evidence either way).
STATUS = {"ok": "[green]ok[/]", "fail": "[bold red]FAIL[/]", "inconclusive": "[yellow]inconclusive[/]",
          "weak": "[magenta]weak[/]"}


def verifier_mark(report: VerifierReport, strict: bool = False) -> str:
    """A verifier's cell: pass, or how it failed (a mutation report's survivors are weak unless judged strictly)."""
    if report.passed:
        return "[green]pass[/]"
    weak = report.weak and not strict
    return STATUS["inconclusive" if report.inconclusive else "weak" if weak else "fail"]


#: The title of the usage table of a command whose verifiers called a model (`verify`, `audit`, `seeds select`).
USAGE_TITLE = "LLM usage (the red team's hacker and the model's near misses)"


def print_verifier_usage(rows: list[dict[str, Any]]) -> None:
    """The model usage of a command's verifiers as a table on stderr (nothing when they asked no model)."""
    if rows:
        err.print(usage_table(USAGE_TITLE, rows))


def say_budget_stop(line: str | None) -> None:
    """The line saying the command's cap stopped its model, once, on stderr (nothing when it did not)."""
    if line is not None:
        err.print(line, markup=False, highlight=False, soft_wrap=True)


REFUSED = "[bold red]refused[/]"


def print_refused(refused: list[tuple[Path, str]], json_out: bool) -> None:
    """The tasks refused before any container started: --json's list, or one line each on stderr."""
    if json_out:
        print_json([refusal(d, why) for d, why in refused])
        return
    for d, why in refused:
        err.print(f"[bold red]refused:[/] {escape(d.name)}: {escape(why)}", highlight=False, soft_wrap=True)
