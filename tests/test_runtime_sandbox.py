"""Trials in real containers: outcomes, phase timings, and no container left behind on Ctrl-C or kill -9."""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from envevo.runtime import ErrorKind, TrialSpec, list_containers, run_trials, sweep_orphans
from tests.conftest import ENVEVO, FIXTURES, ROOT

pytestmark = pytest.mark.sandbox


def test_oracle_and_nop_outcomes(sandbox, tmp_path):
    task = FIXTURES / "runtime" / "hello"
    specs = [TrialSpec(task_dir=task, agent=a, env=sandbox, trials_dir=tmp_path) for a in ("oracle", "nop")]
    oracle, nop = asyncio.run(run_trials(specs, concurrency=2))
    assert oracle.error_kind is ErrorKind.OK and oracle.reward == 1.0 and oracle.rewards == {"reward": 1.0}
    assert nop.error_kind is ErrorKind.OK and nop.reward == 0.0
    for o in (oracle, nop):
        t = o.timings
        assert t.environment_setup > 0 and t.verifier > 0 and t.teardown is not None
        assert t.total >= t.environment_setup + t.verifier
        assert (o.trial_dir / "result.json").is_file()
        assert (o.trial_dir / "verifier" / "reward.txt").is_file()
    assert list_containers(sandbox, owner=f"{socket.gethostname()}:{os.getpid()}") == []


def test_unknown_agent_is_an_error_not_a_crash(sandbox, tmp_path):
    spec = TrialSpec(task_dir=FIXTURES / "runtime" / "hello", agent="no_such_module.x:Agent", env=sandbox, trials_dir=tmp_path)
    (outcome,) = asyncio.run(run_trials([spec], retries=0))
    assert outcome.error_kind is not ErrorKind.OK
    assert outcome.reward is None


def _start_slow_verify(engine, tmp_path):
    proc = subprocess.Popen(
        [*ENVEVO, "verify", str(FIXTURES / "runtime" / "slow"), "--repeats", "1", "--jobs-dir", str(tmp_path / "jobs")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # As from a terminal: a test run started in the background (`make test &`) inherits SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    owner = f"{socket.gethostname()}:{proc.pid}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if len(list_containers(engine, owner=owner)) >= 2:  # oracle and nop sandboxes are up
            return proc, owner
        if proc.poll() is not None:
            pytest.fail(f"verify ended before its sandboxes started: {proc.stderr.read()}")
        time.sleep(0.5)
    proc.kill()
    pytest.fail("the sandboxes never started")


def test_ctrl_c_leaves_no_container(sandbox, tmp_path):
    proc, owner = _start_slow_verify(sandbox, tmp_path)
    time.sleep(2)  # let the agent phase begin: the oracle is now sleeping inside its sandbox
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert list_containers(sandbox, owner=owner) == []


def test_kill_9_leftovers_are_swept_by_the_next_run(sandbox, tmp_path):
    proc, owner = _start_slow_verify(sandbox, tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert list_containers(sandbox, owner=owner), "kill -9 gives the process no chance to clean up"
    assert sweep_orphans(sandbox) >= 1
    assert list_containers(sandbox, owner=owner) == []
