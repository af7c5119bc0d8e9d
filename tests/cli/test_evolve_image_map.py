"""`envevo evolve --image-map`: the trials evolve runs (the seed gate, each candidate) run a copy whose base images are
rewritten, as `verify` and `audit` do, so a task naming an image this host cannot pull can be evolved with a map; the
stored tasks keep their own images. In-process, the procedural engine and the real loop; only the container
verification is replaced by one that records the task dir it was given (no sandbox)."""

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

MIRROR = "registry.local/debian:bookworm-slim"


@pytest.fixture
def verified(monkeypatch) -> list[str]:
    """The Dockerfile of every task dir the verifiers were given; each passes."""
    seen: list[str] = []

    async def verify_candidate(task, task_dir, trials_dir, **kw):
        seen.append((Path(task_dir) / "environment" / "Dockerfile").read_text())
        report = VerifierReport(name="oracle", passed=True)
        return Verdict(task=task.name, task_dir=task_dir, ok=True, reports={"oracle": report})

    monkeypatch.setattr("envevo.evolve._loop.verify_candidate", verify_candidate)
    monkeypatch.setattr("envevo.evolve._seed_start.verify_candidate", verify_candidate)  # the seed gate
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    return seen


def _evolve(tmp_path: Path, *extra: str):
    app = typer.Typer()
    app.command()(evolve)
    seed = write_task(random_chain(None, 3, 7), tmp_path / "seed", overwrite=True)
    return CliRunner().invoke(app, [str(seed), "--run", str(tmp_path / "run"), "--generations", "1", "--max-drift",
                                    "off", "--json", *extra])


def test_the_seed_gate_and_every_candidate_run_with_the_image_map(tmp_path, verified) -> None:
    res = _evolve(tmp_path, "--image-map", f"debian:bookworm-slim={MIRROR}")
    assert res.exit_code == 0, res.output
    assert [s["status"] for s in json.loads(res.stdout)["lineages"]] == ["done"]
    assert len(verified) >= 2  # the seed, and the candidate of generation 1
    assert all(f"FROM {MIRROR}" in d and "FROM debian:bookworm-slim" not in d for d in verified)
    from envevo.store import LineageStore

    with LineageStore.open(tmp_path / "run", create=False) as store:
        (lin,) = store.lineages()
        stored = [(store.task_dir(v.task_hash) / "environment" / "Dockerfile").read_text()
                  for v in store.versions(lin.id)]
    assert len(stored) == 2 and all("FROM debian:bookworm-slim" in d for d in stored)  # the tasks keep their own


def test_without_a_map_the_trials_run_the_task_as_it_is(tmp_path, verified) -> None:
    assert _evolve(tmp_path).exit_code == 0
    assert verified and all("FROM debian:bookworm-slim" in d for d in verified)


def test_a_resume_keeps_the_stored_map_unless_given_again(tmp_path, verified) -> None:
    assert _evolve(tmp_path, "--image-map", f"debian:bookworm-slim={MIRROR}").exit_code == 0
    verified.clear()
    res = _evolve(tmp_path, "--resume", "--generations", "2")
    assert res.exit_code == 0, res.output
    assert verified and all(f"FROM {MIRROR}" in d for d in verified)
