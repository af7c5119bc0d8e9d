"""A damaged run store is one line, never a traceback, for every command that reads it (issue 36 items 9 and 12);
a read leaves the store as it is: a 0-byte store gets no SQLite header, an older schema is not migrated (refused,
naming `envevo lineage upgrade`), and a lineage whose evolve was killed is not shown as running."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.store import SCHEMA_VERSION, LineageStore
from envevo.store._schema import MIGRATIONS
from tests.store.test_store_support import tiny_task

runner = CliRunner()
READERS = [["lineage", "show"], ["lineage", "stats"], ["report"], ["export", "--out", "{tmp}/ds"], ["difficulty"],
           ["review", "{run}", "alpha@0", "--accept"]]


def _args(cmd: list[str], run: Path, tmp: Path) -> list[str]:
    args = [a.format(run=run, tmp=tmp) for a in cmd]
    return args if "{run}" in " ".join(cmd) else [*args[:2 if cmd[0] == "lineage" else 1], str(run),
                                                   *args[2 if cmd[0] == "lineage" else 1:]]


def _one_line(res, *words: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, res.output
    for w in words:
        assert w in res.output, res.output


@pytest.fixture
def run(tmp_path: Path) -> Path:
    with LineageStore.open(tmp_path / "run") as s:
        lid = s.create_lineage("alpha", tiny_task("alpha"), verified=True)
        for g in range(1, 30):  # enough pages that a damaged middle is read
            s.add_candidate(lid, 1, "length", g, tiny_task("alpha", f"try {g}" * 50), reasons=["x" * 500])
        s.commit_generation(lid, 1, tiny_task("alpha", "alpha 1"), direction="length", effort="high", verified=True)
    return tmp_path / "run"


@pytest.mark.parametrize("cmd", READERS, ids=lambda c: " ".join(c[:2]))
def test_a_store_damaged_mid_file_is_one_line(cmd, run, tmp_path) -> None:
    db = run / "store.sqlite"
    size = db.stat().st_size
    assert size > 8 * 4096
    with db.open("r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\xde\xad\xbe\xef" * 2048)
    _one_line(runner.invoke(app, _args(cmd, run, tmp_path)), str(db))


@pytest.mark.parametrize("cmd", READERS, ids=lambda c: " ".join(c[:2]))
def test_a_store_missing_a_table_is_one_line(cmd, run, tmp_path) -> None:
    conn = sqlite3.connect(run / "store.sqlite")
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("DROP TABLE versions")
    conn.commit()
    conn.close()
    _one_line(runner.invoke(app, _args(cmd, run, tmp_path)), "no such table", str(run / "store.sqlite"))


def test_a_read_writes_no_header_into_an_empty_store(tmp_path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "store.sqlite").touch()
    _one_line(runner.invoke(app, ["lineage", "show", str(tmp_path / "run")]), "empty")
    assert (tmp_path / "run" / "store.sqlite").stat().st_size == 0
    assert sorted(os.listdir(tmp_path / "run")) == ["store.sqlite"]


def test_a_read_does_not_migrate_an_older_store(tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    conn = sqlite3.connect(run / "store.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for version, statements in MIGRATIONS[:-1]:
        for stmt in statements:
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, 'then')", (version,))
    conn.close()
    old = SCHEMA_VERSION - 1
    _one_line(runner.invoke(app, ["lineage", "show", str(run)]), f"store schema {old}", "envevo lineage upgrade")
    version = sqlite3.connect(run / "store.sqlite").execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
    assert version == old  # left as it was
    res = runner.invoke(app, ["lineage", "upgrade", str(run)])
    assert res.exit_code == 0 and f"store schema {SCHEMA_VERSION}" in res.output, res.output
    assert runner.invoke(app, ["lineage", "show", str(run)]).exit_code == 0


def test_a_killed_evolve_is_not_shown_as_running(tmp_path) -> None:
    with LineageStore.open(tmp_path / "run") as s:
        s.create_lineage("alpha", tiny_task("alpha"), verified=True)  # running: its evolve is under way
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom envevo.store import LineageStore\n"
                               f"s = LineageStore.open({str(tmp_path / 'run')!r}, hold='envevo evolve')\n"
                               "print('held', flush=True)\ntime.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    try:
        assert holder.stdout.readline().strip() == "held"
        live = runner.invoke(app, ["lineage", "show", str(tmp_path / "run")])
        assert "[running]" in live.stdout, live.output
    finally:
        holder.kill()  # as kill -9 would: the store still says running
        holder.wait()
    dead = runner.invoke(app, ["lineage", "show", str(tmp_path / "run")])
    assert "[running]" not in dead.stdout and "stopped" in dead.stdout and "--resume" in dead.stdout, dead.output
