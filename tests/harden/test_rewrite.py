"""The hardened copy built in memory (no container): separate verifier, artifacts, downloads at build time,
provenance; a TB1 task comes out in Harbor format; --out is never written over what envevo did not write."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.errors import UserError
from envevo.harden import (
    MARKER,
    Artifact,
    check_dest,
    check_out,
    grading_downloads,
    harden_config,
    move_downloads,
    record_provenance,
    write_marker,
)
from envevo.task import load_task, save

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "public"


def _downloads(task):
    return [d for p in sorted(f for f in task.files if f.startswith("tests/") and f.endswith(".sh"))
            for d in grading_downloads(task.read_text(p), p)]


def test_pypi_pytest_moves_into_the_image_and_the_verifier_goes_offline() -> None:
    task = load_task(PUBLIC / "tb2-pypi")
    source_hash = task.content_hash()
    changes, cannot = move_downloads(task, _downloads(task))
    arts = [Artifact(path="/app/palindromes.txt", why="named in tests/test_outputs.py:5")]
    changes = harden_config(task, arts, offline=not cannot, uv_offline=False) + changes
    record_provenance(task, source_hash, "harbor", changes, arts)
    task.check()
    assert cannot == []
    assert "pip install --disable-pip-version-check -q pytest==8.3.5" in task.read_text("environment/envevo-test-tools.sh")
    dockerfile = task.read_text("environment/Dockerfile")
    assert dockerfile.startswith("FROM python:3.13-slim-bookworm") and "RUN bash /usr/local/share/envevo-harden" in dockerfile
    test_sh = task.read_text("tests/test.sh")
    assert ": # envevo harden: installed at build time" in test_sh and "\npip install" not in test_sh
    assert len(test_sh.splitlines()) == len(load_task(PUBLIC / "tb2-pypi").read_text("tests/test.sh").splitlines())
    config = tomllib.loads(task.config_toml())
    assert config["verifier"]["environment_mode"] == "separate"
    assert config["verifier"]["network_mode"] == "no-network"
    assert config["artifacts"] == ["/app/palindromes.txt"]
    hardened = config["metadata"]["envevo"]["hardened"]
    assert hardened["from_content_hash"] == source_hash and hardened["envevo_version"]
    assert any("environment_mode" in c for c in hardened["changes"])
    assert hardened["artifacts"] == [{"path": "/app/palindromes.txt", "why": "named in tests/test_outputs.py:5"}]
    # The instruction, the solution and the tests' checks are untouched.
    original = load_task(PUBLIC / "tb2-pypi")
    for path in ("instruction.md", "solution/solve.sh", "tests/test_outputs.py"):
        assert task.read_bytes(path) == original.read_bytes(path)


def test_a_user_before_the_install_is_kept_after_it() -> None:
    task = load_task(PUBLIC / "tb2-pypi")
    task.write("environment/Dockerfile", "FROM python:3.13-slim-bookworm\nUSER app\n")
    move_downloads(task, _downloads(task))
    tail = task.read_text("environment/Dockerfile").splitlines()[-4:]
    assert tail[0] == "USER root" and tail[-1] == "USER app"


def test_a_tb1_task_comes_out_in_harbor_format(tmp_path: Path) -> None:
    task = load_task(PUBLIC / "tb1-pytest")
    assert task.source_format == "terminal-bench-1"
    changes, cannot = move_downloads(task, _downloads(task))
    assert any("tests/run-tests.sh" in c and "pytest==8.3.5" in c for c in changes) and cannot == []
    harden_config(task, [Artifact(path="/app/count.txt", why="x")], offline=True, uv_offline=False)
    dest = save(task, tmp_path / "tb1-pytest")
    assert (dest / "task.toml").is_file() and not (dest / "task.yaml").exists()
    assert load_task(dest).source_format == "harbor"


def test_an_unknown_download_keeps_the_network_and_says_why() -> None:
    task = load_task(PUBLIC / "multi-output")
    task.write("tests/test.sh", "#!/bin/bash\ncurl -sSLo /tmp/golden.json https://example.com/golden.json\n")
    changes, cannot = move_downloads(task, _downloads(task))
    assert changes == [] and len(cannot) == 1 and "example.com" in cannot[0] and "network" in cannot[0]


def test_out_is_refused_unless_harden_wrote_it(tmp_path: Path) -> None:
    assert check_out(tmp_path / "new", overwrite=False) == []
    mine = tmp_path / "mine"
    (mine / "keep").mkdir(parents=True)
    with pytest.raises(UserError, match="--overwrite"):
        check_out(mine, overwrite=False)
    with pytest.raises(UserError, match="not written by envevo harden"):
        check_out(mine, overwrite=True)
    write_marker(mine, [{"out": str(mine / "t1")}], [])
    assert check_out(mine, overwrite=True) == ["t1"]
    check_dest(mine, "t1", ["t1"])
    with pytest.raises(UserError, match="not written by envevo harden"):
        check_dest(mine, "keep", ["t1"])  # a folder harden never wrote is never replaced
    (mine / MARKER).write_text(json.dumps({"written": ["../etc", "t1"]}))
    assert check_out(mine, overwrite=True) == ["t1"]


def test_the_command_refuses_an_existing_out_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "out" / "x").mkdir(parents=True)
    r = CliRunner().invoke(app, ["harden", str(PUBLIC / "tb2-pypi"), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "--overwrite" in r.output and "Traceback" not in r.output
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(app, ["harden", str(empty), "--out", str(tmp_path / "o2")])
    assert r.exit_code == 2 and "Traceback" not in r.output and not (tmp_path / "o2").exists()


def test_a_run_cut_short_leaves_an_out_a_rerun_may_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_marker(out, [], [])  # what the command writes before the first task
    (out / "t1").mkdir()
    assert check_out(out, overwrite=True) == []
    with pytest.raises(UserError, match="not written by envevo harden"):
        check_dest(out, "t1", [])  # a dir the marker does not list is someone else's
