"""`harden_task` end to end in real sandboxes, proof included. Kept to two fixtures and few trials (repeats 1, no
mutation): tb2-pypi (shared verifier, pytest from PyPI at grading time) is hardened and proved; served-port (a test
that asks a served port) is reported hackable with its evidence and nothing is written."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from envevo.harden import harden_task
from envevo.task import load_task

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "public"

pytestmark = pytest.mark.sandbox


def test_a_shared_verifier_task_is_hardened_and_proved(sandbox, tmp_path: Path) -> None:
    task = load_task(PUBLIC / "tb2-pypi")
    r = asyncio.run(harden_task(task, tmp_path / "out", env=sandbox, jobs_dir=tmp_path / "jobs", repeats=1,
                                mutation="off"))
    assert r.before is not None and r.before.verifies and r.before.red_team.startswith("broken by"), r.before
    assert r.status == "hardened", (r.reason, r.after)
    assert r.after is not None and r.after.verifies and r.after.red_team == "clean"
    assert [a.path for a in r.artifacts] == ["/app/palindromes.txt"]
    config = tomllib.loads((tmp_path / "out" / "tb2-pypi" / "task.toml").read_text())
    assert config["verifier"]["environment_mode"] == "separate" and config["verifier"]["network_mode"] == "no-network"
    assert config["metadata"]["envevo"]["hardened"]["from_content_hash"] == task.content_hash()
    assert (tmp_path / "out" / "tb2-pypi" / "environment" / "envevo-test-tools.sh").is_file()


def test_a_served_port_is_reported_and_nothing_is_written(sandbox, tmp_path: Path) -> None:
    task = load_task(PUBLIC / "served-port")
    r = asyncio.run(harden_task(task, tmp_path / "out", env=sandbox, jobs_dir=tmp_path / "jobs", repeats=1,
                                mutation="off", red_team="off"))
    assert r.status == "not hardened" and "port 8000 on localhost" in r.reason and "tests/test.sh:6" in r.reason
    assert r.suggestion and "file" in r.suggestion
    assert r.before is not None and r.before.verifies
    assert not (tmp_path / "out").exists()
