"""The bwrap backend's own guarantees, in real sandboxes (a few seconds each): what a process inside can reach, that
a command's end and the sandbox's stop end every process, and that kill -9 of envevo leaves nothing running or
mounted. The boundary attacks themselves run on both backends in test_boundary_sandbox.py."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envevo.runtime import BWRAP, open_session, release_image_roots
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.sandbox
TASK = FIXTURES / "realistic" / "separate-verifier"  # no network, a Dockerfile: a task bwrap serves

PROBE = r"""
grep -E '^Cap(Eff|Bnd)' /proc/self/status
cat /proc/self/uid_map
awk '{print $5}' /proc/self/mountinfo | sort | tr '\n' ' '; echo
for p in /proc/[0-9]*; do readlink "$p/root"; done | sort -u | tr '\n' ' '; echo
cat /proc/net/dev | awk 'NR>2 {print $1}' | tr '\n' ' '; echo
"""


@pytest.fixture
def bwrap(sandbox):
    if shutil.which(BWRAP.name) is None:
        pytest.fail(f"{BWRAP.name} is missing: run `envevo doctor --fix` (make test does)")
    yield BWRAP.name
    release_image_roots()  # the image pins this worker holds (see test_boundary_sandbox.env)


def test_a_sandbox_reaches_nothing_of_the_host(bwrap):
    async def main():
        async with open_session(TASK, env=bwrap) as s:
            root = await s.exec(PROBE, timeout_sec=60)
            user = await s.exec("grep -E '^Cap(Eff|Bnd)' /proc/self/status; id -u", timeout_sec=60, user="nobody")
            # A command that leaves a daemon holding its output ends when the command does, as `podman exec` does.
            started = time.monotonic()
            daemon = await s.exec("(setsid sh -c 'sleep 300' &) ; echo left", timeout_sec=60)
            took = time.monotonic() - started
            return root, user, daemon, took

    root, user, daemon, took = asyncio.run(main())
    caps, bound, uid_map, mounts, roots, links = root.stdout.splitlines()
    # Root keeps podman's default capabilities, and holds them only in the sandbox's user namespace (an identity
    # map, so files keep their owners); no CAP_SYS_ADMIN (bit 21), so it cannot mount or unshare its way out.
    assert caps.split()[1] == bound.split()[1] and not int(caps.split()[1], 16) & (1 << 21)
    assert uid_map.split() == ["0", "0", "4294967295"]
    # The only file systems: the overlay at /, its /proc and /dev: no host dir is bound.
    assert set(mounts.split()) <= {"/", "/proc", "/dev", "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                   "/dev/urandom", "/dev/tty", "/dev/pts", "/dev/shm", "/proc/irq", "/proc/bus",
                                   "/proc/sys", "/proc/sysrq-trigger", "/proc/fs"}, mounts
    assert roots.split() == ["/"]  # every process it can see has the sandbox's root, none the host's
    assert links.split() == ["lo:"]  # no network but loopback
    assert [line.split()[1] for line in user.stdout.splitlines()[:2]] == ["0000000000000000"] * 2
    assert user.stdout.splitlines()[2] == "65534"
    assert daemon.stdout.strip() == "left" and took < 20


def test_kill_9_of_envevo_leaves_no_sandbox_process_nor_mount(bwrap, tmp_path):
    script = tmp_path / "hold.py"
    script.write_text(
        "import asyncio, sys\nfrom pathlib import Path\nfrom envevo.runtime import open_session\n"
        "async def main():\n"
        f"    async with open_session(Path({str(TASK)!r}), env={bwrap!r}) as s:\n"
        "        await s.exec('(setsid sh -c \"sleep 600\" &); echo up', timeout_sec=60)\n"
        "        print('ready', flush=True)\n"
        "        await asyncio.sleep(600)\n"
        "asyncio.run(main())\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        mine = _descendants(proc.pid)
        assert mine, "the sandbox's processes are the envevo process's descendants"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in mine):
        time.sleep(0.2)
    assert not [p for p in mine if Path(f"/proc/{p}").exists()], "a sandbox process outlived envevo"
    sandboxes = Path(os.environ.get("ENVEVO_HOME") or Path.home() / ".envevo") / "bwrap" / "sandboxes"
    assert f"{sandboxes}/{proc.pid}-" not in Path("/proc/self/mountinfo").read_text()


def _descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    children: dict[int, list[int]] = {}
    for child, parent in zip(out[::2], out[1::2], strict=True):
        children.setdefault(int(parent), []).append(int(child))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found
