"""Simulated agents acting in real sandboxes (SIMULATION): deterministic facts, and the CLI recording rollouts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from envevo.catalog import build_blocks, random_chain
from envevo.evolve.engines.procedural import write_task
from envevo.rollout import SIM_AGENT, sim_agent_kwargs
from envevo.store import LineageStore
from envevo.task import load_task
from tests.conftest import ROOT

# The command is registered by envevo.cli.main; a child process keeps Harbor's event-loop state per command.
_APP = "import sys, typer; from envevo.cli.rollout_cmd import rollout; a = typer.Typer(); a.command()(rollout); a()"


def _rollout(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _APP, *args], capture_output=True, text=True, timeout=900, cwd=ROOT)

pytestmark = pytest.mark.sandbox


def _task(tmp_path: Path) -> tuple[Path, dict]:
    chain = random_chain(None, 2, 3)
    assert any(b.wrong_differs for b in build_blocks(chain))
    path = write_task(chain, tmp_path / "task")
    return path, load_task(path).envevo_metadata["chain"]


def test_competence_one_passes_and_zero_fails(sandbox, tmp_path: Path) -> None:
    from envevo.runtime import TrialSpec, run_trials

    path, chain = _task(tmp_path)
    specs = [TrialSpec(task_dir=path, agent=SIM_AGENT, env=sandbox, trials_dir=tmp_path / "trials",
                       agent_kwargs=sim_agent_kwargs(chain, "sim-weak", 1, p_step=p))
             for p in (1.0, 0.0)]
    right, wrong = asyncio.run(run_trials(specs, concurrency=2))
    assert right.error_kind == "ok" and right.reward == 1.0, right.error_message
    assert wrong.error_kind == "ok" and wrong.reward == 0.0, wrong.error_message
    assert right.turns and wrong.turns >= right.turns  # wrong draws may be noticed and retried
    log = json.loads((right.trial_dir / "agent" / "simulation.json").read_text())
    assert log["simulated"] and log["turns"] == right.turns


def test_cli_records_simulated_rollouts_and_resumes(sandbox, tmp_path: Path) -> None:
    path, _ = _task(tmp_path)
    run = tmp_path / "run"
    args = [str(path), "--agent", "sim-strong", "-k", "2", "--run", str(run), "--concurrency", "2", "--json"]
    first = _rollout(args)
    assert first.returncode == 0, first.stderr
    [summary] = json.loads(first.stdout)
    assert summary["simulated"] and summary["model"] == "simulation" and summary["n"] == 2
    assert summary["mean_turns"] and summary["mean_turns"] > 0
    with LineageStore.open(run, create=False) as store:
        rows = store.rollouts(summary["task_hash"])
    assert [r.k for r in rows] == [0, 1] and all(r.simulated and r.turns for r in rows)
    # Resume: everything is recorded, so a re-run starts no trial and reports the same summary.
    again = _rollout(args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == [summary]
