"""Trials in real containers: outcomes, phase timings, and no container left behind on Ctrl-C or kill -9."""

import asyncio
import os
import signal
import socket
import subprocess
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


def _start_slow_verify(engine, tmp_path, red_team="off"):
    proc = subprocess.Popen(
        [*ENVEVO, "verify", str(FIXTURES / "runtime" / "slow"), "--repeats", "1", "--red-team", red_team,
         "--jobs-dir", str(tmp_path / "jobs")],
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
    # The red team on: its exploit trials start and stop while the oracle sleeps, so the interrupt lands among them.
    proc, owner = _start_slow_verify(sandbox, tmp_path, red_team="on")
    time.sleep(2)  # let the agent phase begin: the oracle is now sleeping inside its sandbox
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert list_containers(sandbox, owner=owner) == []


# Serial: any other envevo process's start-up sweep (every CLI run does one) could remove the killed run's sandboxes
# before this test sees them, and its own sweep's count would then be 0.
@pytest.mark.serial
def test_kill_9_leftovers_are_swept_by_the_next_run(sandbox, tmp_path):
    proc, owner = _start_slow_verify(sandbox, tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert list_containers(sandbox, owner=owner), "kill -9 gives the process no chance to clean up"
    assert sweep_orphans(sandbox) >= 1
    assert list_containers(sandbox, owner=owner) == []


def test_container_removal_runs_to_its_end_through_cancels(tmp_path):
    """What stop() and `run` rely on: a cancelled caller still waits for the engine command, and asyncio.run's
    final cancel of stray tasks (where Harbor's shielded stop of a cancelled trial ends up) does not cut it short."""
    from envevo.runtime._engine_cli import _run

    def command(marker):
        return ("sh", "-c", f"sleep 1; touch {marker}")

    async def cancelled_caller():
        task = asyncio.create_task(_run(*command(tmp_path / "a"), finish_on_cancel=True))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (tmp_path / "a").exists()

    asyncio.run(cancelled_caller())

    async def stray():
        asyncio.create_task(_run(*command(tmp_path / "b"), finish_on_cancel=True))  # nobody awaits it
        await asyncio.sleep(0.2)

    asyncio.run(stray())
    assert (tmp_path / "b").exists()


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_a_flood_of_output_is_bounded_in_host_memory(sandbox):
    """`cat /dev/zero`-style output from a command in the sandbox (an agent's, an RL policy's) is kept to
    EXEC_OUTPUT_LIMIT per stream and read to its end, never held whole on the host."""
    from envevo.runtime import open_session
    from envevo.runtime._local_exec import EXEC_OUTPUT_LIMIT
    from tests.conftest import FIXTURES

    async def main():
        async with open_session(FIXTURES / "realistic" / "separate-verifier", env=sandbox) as s:
            return await s.exec("head -c 200000000 /dev/zero; echo finished >&2", timeout_sec=300)

    r = asyncio.run(main())
    assert r.exit_code == 0 and r.stderr.strip() == "finished"
    assert EXEC_OUTPUT_LIMIT <= len(r.stdout) < EXEC_OUTPUT_LIMIT + 200
    assert f"{200000000 - EXEC_OUTPUT_LIMIT} more bytes dropped" in r.stdout
