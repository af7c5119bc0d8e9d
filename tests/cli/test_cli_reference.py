"""The command reference (docs/cli.md and the README's table) is generated from the commands and kept current."""

from __future__ import annotations

import subprocess
import sys

from envevo.cli._reference import DOC, README, TABLE_END, TABLE_START, render_doc, render_table, synopsis
from envevo.cli.main import app
from tests.conftest import ROOT


def test_the_committed_reference_matches_the_commands():
    r = subprocess.run([sys.executable, "-m", "envevo.cli._reference", "--check"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_every_visible_command_and_option_is_in_the_reference():
    import typer

    from envevo.cli._reference import commands

    doc = render_doc(app)
    for path, cmd in commands(typer.main.get_command(app)):
        assert f"## envevo {' '.join(path)}\n" in doc
        assert synopsis(path, cmd) in doc
        for p in cmd.params:
            if p.param_type_name == "option" and not p.hidden and p.name != "help":
                assert p.opts[0] in synopsis(path, cmd)
    table = render_table(app)
    assert table.startswith(TABLE_START) and table.endswith(TABLE_END)
    assert "[`envevo export`](docs/cli.md#envevo-export)" in table


def test_check_names_a_stale_file(tmp_path, monkeypatch):
    import envevo.cli._reference as ref

    stale = tmp_path / "cli.md"
    stale.write_text("old\n")
    readme = tmp_path / "README.md"
    readme.write_text(README.read_text(encoding="utf-8"))
    monkeypatch.setattr(ref, "DOC", stale)
    monkeypatch.setattr(ref, "README", readme)
    monkeypatch.setattr(ref, "ROOT", tmp_path)
    monkeypatch.setattr(sys, "argv", ["_reference", "--check"])
    try:
        ref.main()
    except SystemExit as e:
        assert "stale command reference: cli.md" in str(e.code)
    else:
        raise AssertionError("--check passed a stale docs/cli.md")
    assert DOC.name == "cli.md"
