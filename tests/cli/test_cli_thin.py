"""The CLI is thin (docs/architecture.md, cli): a command function builds a config, calls envevo.api once and prints,
in at most 60 lines from its `def` to its last line (its signature counted, decorators not). Option blocks that
several commands share are option groups (cli/_groups.py), so a long signature is a sign of a copied block."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parent.parent.parent / "envevo" / "cli"
MAX_LINES = 60

# Commands not yet moved onto envevo.api, with their length when this test was written: each may only shrink, and
# leaves this list once it is thin. Nothing may be added.
NOT_YET_THIN: dict[str, int] = {}


def command_lengths(folder: Path = CLI) -> dict[str, int]:
    """`file:function` -> lines from `def` to the end, for every public top-level function of cli/*_cmd.py."""
    lengths = {}
    for path in sorted(folder.glob("*_cmd.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                lengths[f"{path.name}:{node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return lengths


def test_every_command_function_is_at_most_60_lines() -> None:
    lengths = command_lengths()
    long = {name: n for name, n in lengths.items() if n > MAX_LINES and name not in NOT_YET_THIN}
    assert not long, f"move the work into envevo.api and the shared options into an option group: {long}"


def test_the_commands_not_yet_thin_only_shrink() -> None:
    lengths = command_lengths()
    grown = {name: (lengths.get(name), was) for name, was in NOT_YET_THIN.items() if lengths.get(name, 0) > was}
    thin = [name for name in NOT_YET_THIN if lengths.get(name, 0) <= MAX_LINES]
    assert not grown, f"grew: {grown}"
    assert not thin, f"thin now: drop them from NOT_YET_THIN: {thin}"


def test_the_measure_sees_a_long_command(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long_cmd.py").write_text(f"@app.command()\ndef long() -> None:\n{body}\n\n\ndef _helper():\n{body}\n")
    assert command_lengths(tmp_path) == {"long_cmd.py:long": MAX_LINES + 1}
