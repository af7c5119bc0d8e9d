"""Ctrl-C during a red-team verification: one line, exit 130, no traceback, no container left.

A terminal sends SIGINT to the whole foreground group (envevo and the engine clients it started), and a user whose
first Ctrl-C does not end the command at once presses it again. Before the fix, a second Ctrl-C during the teardown
raised KeyboardInterrupt inside asyncio's final cancel of the trials: 'Task was destroyed but it is pending!', a
traceback, and "coroutine 'LocalContainerEnvironment.stop' was never awaited"."""

import os
import signal
import socket
import subprocess
import time

import pytest

from envevo.runtime import list_containers
from tests.conftest import ENVEVO, FIXTURES, ROOT

pytestmark = pytest.mark.sandbox


def _exploit_trials(jobs):
    return [p for p in jobs.glob("*/*") if "__rt-" in p.name]


@pytest.mark.parametrize("after", [0.5, 3.0], ids=["exploit-starting", "exploit-running"])
def test_ctrl_c_during_red_team_ends_in_one_line(sandbox, tmp_path, after):
    jobs = tmp_path / "jobs"
    # The slow fixture's oracle sleeps in its sandbox while the red team's exploit trials (log links, FIFOs, sparse
    # files, daemons…) start, run and stop beside it, so the interrupt lands among them.
    proc = subprocess.Popen(
        [*ENVEVO, "verify", str(FIXTURES / "runtime" / "slow"), "--repeats", "1", "--red-team", "on",
         "--jobs-dir", str(jobs)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own group, to signal it the way a terminal does
        # As from a terminal: a test run started in the background (`make test &`) inherits SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    owner = f"{socket.gethostname()}:{proc.pid}"
    try:
        deadline = time.monotonic() + 300
        while not _exploit_trials(jobs):
            if proc.poll() is not None:
                pytest.fail(f"verify ended before the red team started: {proc.stderr.read()}")
            if time.monotonic() > deadline:
                pytest.fail("the red team's trials never started")
            time.sleep(0.2)
        time.sleep(after)
        os.killpg(proc.pid, signal.SIGINT)
        for pause in (0.3, 1.0):  # Ctrl-C again, while the sandboxes are being torn down
            time.sleep(pause)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    for noise in ("Traceback", "never awaited", "Task was destroyed", "Exception ignored"):
        assert noise not in stderr, stderr
    # Progress lines (stderr is a pipe: plain lines, not a bar), then the one line; a start-up note (the image budget
    # acting) may come before them.
    lines = stderr.strip().splitlines()
    lines = lines[next((i for i, ln in enumerate(lines) if ln.startswith("verifying")), 0):]
    assert all(ln.startswith("verifying") for ln in lines[:-1]), stderr
    assert "interrupted" in lines[-1]
    assert list_containers(sandbox, owner=owner) == []
