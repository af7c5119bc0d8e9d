"""No container writes the host, in any phase: the attacks of issue 22 class 1, 5 and 6, in real containers.

Each phase plants, where the host later writes or reads by name, a symlink to a host sentinel file (its absolute
path given to the attacker: the strongest guess), a symlink to the task's own tests, a FIFO and a sparse giant.
After the trial the sentinel and the task dir are unchanged, the trial dir holds only regular files and dirs, it
ended within a bound, and its disk use is small."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from envevo.runtime import BWRAP, ErrorKind, TrialSpec, open_session, release_image_roots, run_trials
from envevo.task import dir_hash

pytestmark = pytest.mark.sandbox

DOCKERFILE = "FROM debian:bookworm-slim\nWORKDIR /app\n"


@pytest.fixture(params=["podman", BWRAP.name])
def env(request, sandbox):
    """Each local backend, held to the same boundary: the default (podman) and the lighter bwrap."""
    if request.param == BWRAP.name and shutil.which(BWRAP.name) is None:
        pytest.fail(f"{BWRAP.name} is missing: run `envevo doctor --fix` (make test does)")
    yield request.param if request.param == BWRAP.name else sandbox
    # bwrap pins each image with a never-started container for the process's life: later tests in this worker count
    # the containers it owns
    release_image_roots()


def _plant(sentinel: Path, task_dir: Path, where: str) -> str:
    """Shell that plants every hostile kind of file at the names under `where` that the host touches."""
    names = ("exit-code.txt oracle.txt script.log script.json trajectory.json test-stdout.txt reward.txt "
             "reward.json ctrf.json")
    return f"""
mkdir -p {where}
cat /proc/self/mountinfo > {where}/mounts.txt 2>/dev/null
for n in {names}; do rm -rf {where}/$n; ln -s {sentinel} {where}/$n; done
ln -s {task_dir}/tests/test.sh {where}/test.sh
ln -s / {where}/root
mkfifo {where}/fifo.json
truncate -s 8G {where}/sparse.bin
ln {where}/mounts.txt {where}/hard.txt 2>/dev/null
"""


def _task(root: Path, sentinel: Path, *, separate: bool) -> Path:
    task = root / ("separate" if separate else "shared")
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "instruction.md").write_text("Write 42 to /app/out/answer.txt.\n")
    (task / "solution").mkdir()
    (task / "tests").mkdir()
    solve = "#!/bin/bash\nmkdir -p /app/out\necho 42 > /app/out/answer.txt\n" + _plant(sentinel, task, "/logs/agent")
    solve += _plant(sentinel, task, "/logs/artifacts") + _plant(sentinel, task, "/app/out")
    # A daemon that keeps re-planting, so a copy made later still meets links.
    solve += f"(setsid sh -c 'while :; do ln -sf {sentinel} /logs/agent/late.txt; sleep 0.2; done' >/dev/null 2>&1 &)\n"
    (task / "solution" / "solve.sh").write_text(solve)
    test = "#!/bin/bash\n" + _plant(sentinel, task, "/logs/verifier").replace("rm -rf /logs/verifier/$n; ", "")
    test += ("rm -f /logs/verifier/reward.txt /logs/verifier/reward.json\n"
             "if [ \"$(cat /app/out/answer.txt 2>/dev/null)\" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    (task / "tests" / "test.sh").write_text(test)
    hook = f'[[verifier.collect]]\ncommand = "{_plant(sentinel, task, "/app/out").strip().replace(chr(10), "; ")}"\nuser = "root"\n'
    toml = '[verifier]\ntimeout_sec = 120.0\n'
    if separate:
        toml = 'artifacts = ["/app/out"]\n\n' + toml + 'environment_mode = "separate"\n\n' + hook
    (task / "task.toml").write_text(toml + '\n[agent]\ntimeout_sec = 120.0\n\n[environment]\nnetwork_mode = "no-network"\n')
    return task


def _only_plain_files(root: Path) -> list[str]:
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            mode = os.lstat(os.path.join(dirpath, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                bad.append(os.path.join(dirpath, name))
    return bad


def _disk_use(root: Path) -> int:
    return sum(os.lstat(os.path.join(d, f)).st_blocks * 512 for d, _, files in os.walk(root) for f in files)


@pytest.mark.parametrize("separate", [True, False], ids=["separate-verifier", "shared-verifier"])
def test_no_phase_writes_the_host(env, tmp_path, separate):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("host file\n")
    task = _task(tmp_path / "tasks", sentinel, separate=separate)
    before = dir_hash(task)
    trials = tmp_path / "trials"
    start = time.monotonic()
    specs = [TrialSpec(task_dir=task, agent=a, env=env, trials_dir=trials) for a in ("oracle", "nop")]
    oracle, nop = asyncio.run(run_trials(specs, concurrency=2, retries=0))
    took = time.monotonic() - start
    assert sentinel.read_text() == "host file\n"
    assert dir_hash(task) == before
    assert _only_plain_files(trials) == []
    assert took < 300, f"the trials took {took:.0f} s"
    assert _disk_use(trials) < 64 << 20
    # The attack changes nothing about the verdicts: the oracle's answer is right, the nop's is missing.
    assert oracle.error_kind is ErrorKind.OK and oracle.reward == 1.0, oracle.error_message
    assert nop.error_kind is ErrorKind.OK and nop.reward == 0.0, nop.error_message
    notes = " ".join(oracle.notes)
    assert "symlink, not copied" in notes and "FIFO, not copied" in notes and "per-file cap" in notes


def test_the_sandbox_session_writes_no_host_file(env, tmp_path):
    """The Modifier's shell and the exploit agents: a session's downloads are extracted the same way."""
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("host file\n")
    task = _task(tmp_path / "tasks", sentinel, separate=True)
    before = dir_hash(task)

    async def attack():
        async with open_session(task, env=env) as s:
            await s.exec(_plant(sentinel, task, "/tmp/out"), timeout_sec=60)
            for name in ("reward.txt", "fifo.json", "sparse.bin"):
                with pytest.raises(RuntimeError):
                    await s.download(f"/tmp/out/{name}", tmp_path / "got" / name)

    asyncio.run(asyncio.wait_for(attack(), 300))
    assert sentinel.read_text() == "host file\n"
    assert dir_hash(task) == before
    assert _only_plain_files(tmp_path / "got") == [] if (tmp_path / "got").exists() else True
