"""envevo's own local environment: what a user's task.toml asks for is what the container gets.

The settings fixture declares no network, a workdir, an agent user, env vars, CPU and memory limits; the oracle
only passes when the solution sees all of them, and the container itself is inspected while a session holds it.
"""

import asyncio
import json
import os
import socket
import subprocess

import pytest

from envevo.runtime import ErrorKind, TrialSpec, check_env, list_containers, open_session, resolve_env, run_trials
from tests.conftest import FIXTURES, run_cli

SETTINGS = FIXTURES / "runtime" / "settings"
HELLO = FIXTURES / "runtime" / "hello"
COMPOSE = FIXTURES / "realistic" / "compose"


def test_selection_by_env_and_task():
    assert resolve_env("podman", HELLO).import_path.endswith("PodmanLocalEnvironment")
    assert resolve_env("podman", COMPOSE).import_path.endswith("PodmanComposeEnvironment")
    assert resolve_env("harbor:podman", HELLO).harbor_type == "podman"
    assert resolve_env("daytona", HELLO).harbor_type == "daytona"
    assert check_env("docker") == "docker" and check_env("modal") is None
    with pytest.raises(ValueError, match="unknown --env 'nosuch'"):
        check_env("nosuch")
    with pytest.raises(ValueError, match="unknown Harbor environment"):
        check_env("harbor:nosuch")
    with pytest.raises(ValueError, match="cannot load the environment"):
        check_env("no_such_pkg.mod:Env")


def test_unknown_env_stops_in_one_line_before_any_trial(tmp_path):
    proc = run_cli("verify", str(HELLO), "--env", "nosuch", "--jobs-dir", str(tmp_path / "jobs"))
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown --env 'nosuch'" in lines[0], proc.stderr
    assert not (tmp_path / "jobs").exists()


@pytest.mark.sandbox
def test_task_settings_reach_the_trial(sandbox, tmp_path):
    specs = [TrialSpec(task_dir=SETTINGS, agent=a, env=sandbox, trials_dir=tmp_path) for a in ("oracle", "nop")]
    oracle, nop = asyncio.run(run_trials(specs, concurrency=2))
    assert oracle.error_kind is ErrorKind.OK and oracle.reward == 1.0, oracle
    assert nop.error_kind is ErrorKind.OK and nop.reward == 0.0
    # The log dirs are bound to the host: Harbor read them in place.
    assert (oracle.trial_dir / "agent" / "oracle.txt").is_file()
    assert (oracle.trial_dir / "verifier" / "test-stdout.txt").read_text().startswith("PASS")
    assert any("localhost/envevo-cache:" in n for n in oracle.notes)  # which image ran, on the outcome itself


@pytest.mark.sandbox
def test_session_container_has_no_network_limits_and_state(sandbox):
    async def go():
        async with open_session(SETTINGS, env=sandbox, upload={"tests": "/tests"}) as s:
            mine = list_containers(sandbox, owner=f"{socket.gethostname()}:{os.getpid()}")
            assert len(mine) == 1, "the session's container carries envevo's owner label"
            cid = mine[0]
            info = json.loads(subprocess.run([sandbox, "inspect", cid], capture_output=True, text=True).stdout)[0]
            host = info["HostConfig"]
            assert host["NanoCpus"] == 1_500_000_000 and host["Memory"] == 768 * 1024 * 1024
            ifaces = await s.exec("cat /proc/net/dev")
            assert "lo:" in ifaces.stdout and "eth0" not in ifaces.stdout  # --network=none
            await s.exec("echo kept > /tmp/state")
            again = await s.exec("cat /tmp/state; echo $GREETING; pwd; ls /tests")
            assert again.stdout.split() == ["kept", "hello", "from", "task.toml", "/srv/work", "test.sh"]
            slow = await s.exec("sleep 30 && echo late > /tmp/late", timeout_sec=1)
            assert slow.timed_out
            left = await s.exec("ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
            assert "sleep 30" not in left.stdout  # the timed-out command was killed, not just its client
        return cid

    cid = asyncio.run(go())
    assert subprocess.run([sandbox, "container", "exists", cid]).returncode != 0  # stopped and removed


@pytest.mark.sandbox
def test_harbor_podman_stays_selectable(sandbox, tmp_path):
    (o,) = asyncio.run(run_trials([TrialSpec(task_dir=HELLO, agent="oracle", env=f"harbor:{sandbox}", trials_dir=tmp_path)]))
    assert o.error_kind is ErrorKind.OK and o.reward == 1.0, o.error_message


@pytest.mark.sandbox
@pytest.mark.serial  # it compares the whole image store before and after: a parallel build would add to it
def test_a_failed_build_leaves_no_images(sandbox, tmp_path):
    from envevo.runtime._image_cache import build_cached_image

    (tmp_path / "Dockerfile").write_text(f"FROM debian:bookworm-slim\nRUN echo {tmp_path.name} > /a\nRUN echo b > /b\nRUN exit 3\n")

    def images() -> set[str]:
        return set(subprocess.run([sandbox, "images", "-a", "-q", "--no-trunc"], capture_output=True, text=True).stdout.split())

    before = images()
    ok, _tag, output = asyncio.run(build_cached_image(sandbox, tmp_path))
    assert not ok and "exit status 3" in output
    assert output.count("--> ") >= 2  # two steps were committed before the failure
    assert images() - before == set()


@pytest.mark.sandbox
def test_a_cached_image_removed_mid_run_is_built_again(sandbox, tmp_path):
    """A run remembers which cached images it saw, to skip `image exists` on every trial; an image removed behind its
    back (a prune by another envevo, a user's rmi) must not fail the next trial."""
    import shutil

    from envevo.runtime import cache_tag

    task = tmp_path / "task"
    shutil.copytree(HELLO, task)
    # Content of its own, so removing its image touches no other test's.
    with (task / "environment" / "Dockerfile").open("a") as f:
        f.write(f"\nRUN echo {tmp_path.name} > /envevo-test-marker\n")
    tag = cache_tag(task / "environment")

    async def twice():
        spec = TrialSpec(task_dir=task, agent="oracle", env=sandbox, trials_dir=tmp_path / "trials")
        (first,) = await run_trials([spec])
        subprocess.run([sandbox, "rmi", "-f", tag], check=True, capture_output=True)
        (second,) = await run_trials([spec])
        return first, second

    try:
        first, second = asyncio.run(twice())
        assert first.reward == 1.0, first.error_message
        assert second.error_kind is ErrorKind.OK and second.reward == 1.0, second.error_message
        assert subprocess.run([sandbox, "image", "exists", tag]).returncode == 0
    finally:
        subprocess.run([sandbox, "rmi", "-f", tag], capture_output=True)
