"""`envevo evolve --resume` and `--retry-skipped`, in-process with the procedural engine and the real loop; only the
container verification is replaced by a verdict the test decides (no sandbox). What a user sees: a lineage that
ended stays as stored and is said once, and a seed the gate refused is tried again only when asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.catalog import random_chain
from envevo.cli.evolve_cmd import evolve
from envevo.evolve.engines.procedural import write_task
from envevo.verify import Verdict, VerifierReport

runner = CliRunner()


@pytest.fixture
def gate(monkeypatch):
    """The seeds the oracle fails (by name); every other task passes."""
    failing: set[str] = set()

    async def verify_candidate(task, task_dir, trials_dir, **kw):
        ok = Path(task_dir).parent.name not in failing  # RUN/work/seeds/NAME/task; candidates never fail
        report = VerifierReport(name="oracle", passed=ok, reasons=[] if ok else ["the reference solution fails [2 of 5 tests]"])
        return Verdict(task=task.name, task_dir=task_dir, ok=ok, reports={"oracle": report})

    monkeypatch.setattr("envevo.evolve._loop.verify_candidate", verify_candidate)  # the candidates
    monkeypatch.setattr("envevo.evolve._seed_start.verify_candidate", verify_candidate)  # the seed gate
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    return failing


def _evolve(tmp_path: Path, *extra: str, drift: str | None = "off"):
    app = typer.Typer()
    app.command()(evolve)
    seeds = [str(write_task(random_chain(None, 3, n), tmp_path / f"seed-{n}", overwrite=True)) for n in (7, 8)]
    return runner.invoke(app, [*seeds, "--run", str(tmp_path / "run"), "--generations", "1",
                               *(["--max-drift", drift] if drift else []), "--json", *extra])


def _statuses(res) -> dict[str, tuple[str, int]]:
    assert res.exit_code == 0, res.output
    return {s["lineage"]: (s["status"], s["generations"]) for s in json.loads(res.stdout)["lineages"]}


def test_a_resume_keeps_a_refused_seed_and_says_so_until_retry_skipped_reopens_it(tmp_path, gate):
    gate.add("seed-8")
    assert _statuses(_evolve(tmp_path)) == {"seed-7": ("done", 1), "seed-8": ("terminated", 0)}

    gate.clear()  # the seed is fixed (or the gate's settings changed): a plain resume still keeps it as it ended
    res = _evolve(tmp_path, "--resume")
    assert _statuses(res) == {"seed-7": ("done", 1), "seed-8": ("terminated", 0)}
    assert ("seed-8: kept as stored: terminated, 0 generations: the seed is not sound: oracle: the reference solution "
            "fails [2 of 5 tests] (--retry-skipped tries this seed again)") in res.stderr  # brackets kept
    assert "seed-7: kept as stored: done, 1 generation: reached generation 1" in res.stderr

    assert _statuses(_evolve(tmp_path, "--resume", "--retry-skipped")) == {"seed-7": ("done", 1), "seed-8": ("done", 1)}


def test_retry_skipped_needs_resume(tmp_path, gate):
    res = _evolve(tmp_path, "--retry-skipped")
    assert res.exit_code == 2 and "add --resume" in res.stderr


def test_a_resume_applies_a_verifier_setting_given_again_and_says_so(tmp_path, gate):
    """A resume keeps the stored --red-team and --mutation unless the command line names them; a different value
    given applies from the resume on, with one line naming the stored one (issue 25)."""
    from envevo.store import LineageStore

    def stored() -> dict:
        with LineageStore.open(tmp_path / "run", create=False) as store:
            return store.run_config() or {}

    _statuses(_evolve(tmp_path, "--red-team", "off", "--mutation", "off"))
    res = _evolve(tmp_path, "--resume", "--generations", "2")
    _statuses(res)
    assert (stored()["red_team"], stored()["mutation"]) == ("off", "off") and "from this resume on" not in res.stderr
    res = _evolve(tmp_path, "--resume", "--generations", "3", "--red-team", "sample:2", "--mutation", "off")
    _statuses(res)
    assert "--red-team sample:2 from this resume on (the run stored off" in res.stderr
    assert "--mutation" not in res.stderr  # given, but the same as stored
    assert (stored()["red_team"], stored()["mutation"]) == ("sample:2", "off")


def test_a_resume_keeps_the_stored_drift_bound_and_env_unless_given(tmp_path, gate):
    """Before, --max-drift and --env were always taken from a resume's command line: resuming without them reset a
    run's drift bound to the default (what "accepted" means) and its sandbox to podman, silently."""
    from envevo.store import LineageStore

    def stored() -> dict:
        with LineageStore.open(tmp_path / "run", create=False) as store:
            return store.run_config() or {}

    _statuses(_evolve(tmp_path, drift="0.9"))
    res = _evolve(tmp_path, "--resume", "--generations", "2", drift=None)
    _statuses(res)
    assert stored()["max_drift"] == 0.9 and stored()["env"] == "podman" and "from this resume on" not in res.stderr
    res = _evolve(tmp_path, "--resume", "--generations", "3", drift="off")
    _statuses(res)
    assert stored()["max_drift"] is None and "--max-drift off from this resume on (the run stored 0.9" in res.stderr
