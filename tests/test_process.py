"""A helper server started for a test or a benchmark never outlives the process that started it, even when that
process is killed before its cleanup runs (pytest killed with SIGTERM left the real-model suite's llama-server up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from envevo._process import pid_alive

_OWNER = """
import subprocess, sys, time
from envevo._process import die_with_parent
child = subprocess.Popen(["sleep", "120"], preexec_fn=(lambda: die_with_parent(nice=5)) if sys.argv[1] == "bound" else None)
print(child.pid, flush=True)
time.sleep(120)
"""


def _orphan_after_owner_killed(mode: str) -> bool:
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, mode], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    child = int(owner.stdout.readline())
    owner.send_signal(signal.SIGKILL)  # no cleanup at all
    owner.wait(timeout=10)
    deadline = time.monotonic() + 5
    while pid_alive(child) and time.monotonic() < deadline:
        try:  # reap it if it became ours (it is re-parented to init or a subreaper otherwise)
            os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    alive = pid_alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    return alive


def test_a_bound_child_dies_with_its_owner_and_an_unbound_one_would_not() -> None:
    assert not _orphan_after_owner_killed("bound")
    assert _orphan_after_owner_killed("free")  # the control: without it the child outlives its owner

