"""Two `envevo evolve` on one run dir: the second refuses in one line naming the live holder's PID; a killed
holder leaves no stale lock (issue 27)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envevo.store import LineageStore, StoreError
from tests.conftest import ROOT, run_cli

# The holder opens its run exactly as `envevo evolve` does (open_run), then waits until killed.
HOLDER = """
import sys, time
from pathlib import Path
from envevo.evolve import EvolveConfig, open_run
store, _ = open_run(Path(sys.argv[1]), EvolveConfig(), resume=False)
print("holding", flush=True)
time.sleep(600)
"""


def _start_holder(run: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(run)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


def test_a_second_evolve_on_a_held_run_refuses_naming_the_holder(tmp_path):
    seed, run = tmp_path / "seed", tmp_path / "run"
    assert run_cli("seed", "procedural", str(seed), "--length", "3", "--seed", "7").returncode == 0
    holder = _start_holder(run)
    try:
        # --env daytona: refused before any sandbox is needed, so this runs without an engine.
        for extra in ([], ["--resume"]):
            second = run_cli("evolve", str(seed), "--run", str(run), "--env", "daytona", *extra, timeout=120)
            assert second.returncode == 2, second.stderr
            assert "Traceback" not in second.stderr
            lines = second.stderr.strip().splitlines()
            assert len(lines) == 1, second.stderr
            assert f"in use by envevo evolve (pid {holder.pid})" in lines[0] and f"kill {holder.pid}" in lines[0]
    finally:
        holder.kill()
        holder.wait()
    # kill -9 leaves the lock file, never the lock: the run opens for a new writer at once.
    LineageStore.open(run, hold="envevo evolve").close()


def test_the_lock_is_held_per_store_and_released_on_close(tmp_path):
    first = LineageStore.open(tmp_path / "run", durable=False, hold="envevo evolve")
    reader = LineageStore.open(tmp_path / "run", create=False)  # readers (lineage show, report) never wait
    with pytest.raises(StoreError, match=r"in use by envevo evolve \(pid \d+\).*--resume"):
        LineageStore.open(tmp_path / "run", durable=False, hold="envevo evolve")
    first.close()
    LineageStore.open(tmp_path / "run", durable=False, hold="envevo evolve").close()
    reader.close()


def test_evolving_a_real_task_offline_names_the_way_on(tmp_path):
    # A user's own Harbor task under the default (procedural) engine: one line that names the model path.
    real = ROOT / "tests" / "fixtures" / "realistic" / "python-slim"
    result = run_cli("evolve", str(real), "--run", str(tmp_path / "run"), "--env", "daytona", timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"envevo evolve {real} --engine llm --model <provider:model>" in lines[0]
    assert "envevo seed procedural" in lines[0]
