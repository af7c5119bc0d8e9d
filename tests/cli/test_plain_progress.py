"""What long commands say on stderr when it is not a terminal (nohup, CI, a pipe), the run summary of a skipped seed,
and the line Ctrl-C leaves, per command (issue 25: defects 6, 10, 11). The commands run in-process through typer's
CliRunner, whose stderr is captured (not a TTY); the library calls behind them are replaced by fakes that report
progress as the real ones do."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from envevo.catalog import random_chain
from envevo.cli import _common
from envevo.cli.difficulty_cmd import difficulty
from envevo.cli.evolve_cmd import evolve
from envevo.cli.rollout_cmd import rollout
from envevo.evolve import Event
from envevo.evolve.engines.procedural import write_task
from envevo.rollout import RolloutSummary
from envevo.runtime import TrialOutcome
from envevo.trace import trace_of_task

runner = CliRunner()


def _app(command) -> typer.Typer:
    app = typer.Typer()
    app.command()(command)
    return app


@pytest.fixture
def every_change(monkeypatch):
    """No rate limit: every change is a line (the limit itself is tested with a clock)."""
    monkeypatch.setattr(_common, "PLAIN_EVERY", 0.0, raising=False)
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)


@pytest.fixture
def no_signal_changes(monkeypatch):
    """The interrupt handler ignores further SIGINTs and quiets asyncio's noise: not in the test process."""
    monkeypatch.setattr(_common, "_ignore_further_interrupts", lambda: None)
    monkeypatch.setattr(_common, "_quiet_closed_loop_noise", lambda: None)


def test_plain_lines_are_rate_limited_and_the_last_state_is_flushed(monkeypatch) -> None:
    from envevo.cli._common import PlainProgress

    buf = io.StringIO()
    monkeypatch.setattr(_common, "err", Console(file=buf, width=200))
    now = [0.0]
    lines = PlainProgress(every=5, clock=lambda: now[0])
    lines.update("a", "a g00 candidate")  # the first state: at once
    now[0] = 1
    lines.update("a", "a g01 plan")  # within 5 s: held
    lines.update("b", "b g00 candidate")
    now[0] = 6
    lines.update("a", "a g01 candidate")  # 5 s on: each key's latest state
    now[0] = 7
    lines.update("a", "a g01 candidate")  # no change: nothing
    lines.update("b", "b g00 accepted")
    lines.flush()  # the end: what is held
    assert buf.getvalue().splitlines() == ["a g00 candidate (0s)", "a g01 candidate (6s)", "b g00 candidate (6s)",
                                           "b g00 accepted (7s)"]


def test_rollout_prints_progress_lines_when_stderr_is_not_a_terminal(tmp_path: Path, monkeypatch, every_change) -> None:
    task = write_task(random_chain(None, 3, 7), tmp_path / "t")

    async def fake_rollout(tasks, agent, model, k, *, on_trial, **_):
        for reward in (1.0, 0.0):
            on_trial(tasks[0], TrialOutcome(task="t", agent=agent, reward=reward))
        return [RolloutSummary(task=tasks[0].name, agent=agent, n=2, passes=1)]

    monkeypatch.setattr("envevo.rollout.rollout", fake_rollout)
    res = runner.invoke(_app(rollout), [str(task), "-k", "2", "--json"])
    assert res.exit_code == 0, res.output
    name = json.loads(res.stdout)[0]["task"]
    assert [ln.rsplit(" (", 1)[0] for ln in res.stderr.splitlines()] == [
        "rollouts of sim-medium (1 task(s) × 2): 0/2", f"rollouts of sim-medium (1 task(s) × 2): 1/2 {name} → 1.0",
        f"rollouts of sim-medium (1 task(s) × 2): 2/2 {name} → 0.0"]


def _fake_evolve(monkeypatch, skipped: str | None = None, interrupt: bool = False) -> None:
    """start_lineages and the evolve loop, reporting as the real ones do; seed `skipped` ends at once (no ξ)."""

    async def start(store, seeds, engine, cfg, *, checks, on_event, retry_skipped=False, verifiers=None):
        if interrupt:
            raise KeyboardInterrupt
        ids = []
        for name, task in seeds:
            if name == skipped:
                lid = store.create_lineage(name, task)
                store.finish_lineage(lid, "terminated", "skipped: no ξ")
                on_event(Event(name, 0, "terminated", "skipped: no ξ"))
            else:
                on_event(Event(name, 0, "candidate", "verifying the seed"))
                ids.append(store.create_lineage(name, task, trace=trace_of_task(task), verified=True))
        return ids

    async def run(store, ids, engine, cfg, *, checks, on_event, executor, verifiers=None):
        for lid in ids:
            on_event(Event(lid, 1, "plan", "proposing"))
            on_event(Event(lid, 1, "candidate", "verifying"))
            on_event(Event(lid, 1, "accepted", ""))  # a stage with nothing to add
            store.finish_lineage(lid, "done")

    monkeypatch.setattr("envevo.evolve.start_lineages", start)
    monkeypatch.setattr("envevo.evolve.evolve", run)


def _evolve_two_seeds(tmp_path: Path, monkeypatch):
    """seed-a evolves a generation; seed-b is skipped (its ξ could not be extracted)."""
    a = write_task(random_chain(None, 3, 7), tmp_path / "seed-a")
    b = write_task(random_chain(None, 3, 8), tmp_path / "seed-b")
    _fake_evolve(monkeypatch, skipped="seed-b")
    res = runner.invoke(_app(evolve), [str(a), str(b), "--run", str(tmp_path / "run"), "--generations", "1"])
    assert res.exit_code == 0, res.output
    return res


def test_evolve_prints_a_line_per_stage_when_stderr_is_not_a_terminal(tmp_path: Path, monkeypatch, every_change) -> None:
    res = _evolve_two_seeds(tmp_path, monkeypatch)
    said = [ln.rsplit(" (", 1)[0] for ln in res.stderr.splitlines()]
    assert said[:5] == ["seed-a g00 candidate: verifying the seed", "seed-b: skipped: no ξ",
                        "seed-a g01 plan: proposing", "seed-a g01 candidate: verifying",
                        "seed-a g01 accepted"]  # no "g01 accepted:" with nothing after (issue 36)


def test_the_run_summary_gives_a_skipped_seed_no_L(tmp_path: Path, monkeypatch, every_change) -> None:
    res = _evolve_two_seeds(tmp_path, monkeypatch)
    row = next(ln for ln in res.stdout.splitlines() if "seed-b" in ln)
    assert "None" not in res.stdout and " - " in row, res.stdout


def test_ctrl_c_of_evolve_says_to_resume(tmp_path: Path, monkeypatch, every_change, no_signal_changes) -> None:
    seed = write_task(random_chain(None, 3, 7), tmp_path / "seed")
    _fake_evolve(monkeypatch, interrupt=True)
    res = runner.invoke(_app(evolve), [str(seed), "--run", str(tmp_path / "run")])
    assert res.exit_code == 130
    assert "--resume" in res.stderr.splitlines()[-1]


def test_ctrl_c_of_difficulty_does_not_speak_of_sandboxes(tmp_path: Path, monkeypatch, no_signal_changes) -> None:
    task = write_task(random_chain(None, 3, 7), tmp_path / "t")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("envevo.analysis.task_rows", interrupted)
    res = runner.invoke(_app(difficulty), [str(task)])
    assert res.exit_code == 130
    last = res.stderr.splitlines()[-1]
    assert last.startswith("interrupted") and "torn down" not in last and "no sandbox" in last
