"""Reads write nothing, and the store measures nothing: `lineage show` and `report` leave a run's store file
byte-identical (versions without drift are named, not measured), and importing the store loads no encoder."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys

from envevo.store import LineageStore
from tests.conftest import ROOT, run_cli
from tests.evolve.test_evolve_loop import seed_task, trace_of

ENCODER_MODULES = ("envevo.trace._drift_encoder", "envevo.trace._embed", "numpy")


def _run_without_drift(tmp_path):
    """A run whose versions have no drift stored, as a run made before drift was recorded."""
    run_dir = tmp_path / "run"
    with LineageStore.open(run_dir) as store:
        seed = seed_task()
        lid = store.create_lineage("hello", seed, trace=trace_of(seed))
        child = seed.model_copy(deep=True)
        child.write("instruction.md", seed.instruction + "\nThen count the lines.\n")
        store.commit_generation(lid, 1, child, direction="length", effort="high", verified=True)
    return run_dir


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_lineage_show_and_report_leave_the_store_byte_identical(tmp_path):
    run_dir = _run_without_drift(tmp_path)
    db = run_dir / "store.sqlite"
    before = _digest(db)
    shown = run_cli("lineage", "show", str(run_dir), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["notes"][0].startswith("drift not measured for 2 version(s)")
    table = run_cli("lineage", "show", str(run_dir))
    assert table.returncode == 0, table.stderr
    said = " ".join(table.stderr.split())  # rich wraps the line at the terminal's width
    assert "drift not measured" in said and f"envevo analyze drift {run_dir}" in said
    report = run_cli("report", str(run_dir), "--json")
    assert report.returncode == 0, report.stderr
    assert "drift not measured for 2 version(s)" in (run_dir / "report.html").read_text(encoding="utf-8")
    assert _digest(db) == before
    with LineageStore.open(run_dir, create=False) as store:
        assert [v.drift for v in store.versions()] == [None, None]


def test_importing_the_store_loads_no_encoder():
    code = f"import sys, envevo.store; print([m for m in {ENCODER_MODULES!r} if m in sys.modules])"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert loaded.stdout.strip() == "[]"


def test_no_store_module_names_the_encoder():
    named = []
    for path in sorted((ROOT / "envevo" / "store").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(a.name for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            named += [f"{path.name}: {n}" for n in names
                      if n.startswith(ENCODER_MODULES) or n in ("measure_drift", "drift_encoder", "DriftEncoder")]
    assert named == []
