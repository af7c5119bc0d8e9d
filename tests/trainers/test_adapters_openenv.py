"""OpenEnv 0.10: an rl export served as OpenEnv environments, driven through OpenEnv's own clients (async and
`.sync()`), each episode a live trial verified with the task's own verifier mode: reference 1.0, nothing 0.0, a tool
shim 0.0, a forged reward file 0.0. Bounded: a client killed mid-episode, and one that never asks for the reward,
leave no sandbox past the idle timeout. Runs in `.venv-openenv` (`make test`), the trials in ENVEVO_RUNTIME_PYTHON."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("openenv", reason="install the openenv extra: pip install -e '.[openenv]'")

from envevo.errors import UserError  # noqa: E402
from envevo.trainers.openenv import (  # noqa: E402
    EnvevoAction,
    EnvevoEnvClient,
    check_port,
    create_export_app,
)
from tests.conftest import ROOT  # noqa: E402
from tests.trainers._trainer_support import task_export  # noqa: E402

SEPARATE = ROOT / "tests" / "fixtures" / "realistic" / "separate-verifier"
TR_SHIM = ("printf '#!/bin/sh\\necho 2 3 5 7 11 13 17 19 23 29 31 37 41 43 47 53 59 61 67 71 73 79 83 89 97\\n' "
           "> /usr/local/bin/tr && chmod +x /usr/local/bin/tr && touch /app/primes.txt")
FORGE = "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > /logs/verifier/reward.json"
TASK = "separate__g00"
IDLE = 6.0  # the server's idle timeout in this test, seconds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_port_in_use_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UserError, match=rf"^port {port} on 127.0.0.1 is in use; choose another with --port$"):
            check_port("127.0.0.1", port)


def test_envevo_serve_on_a_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "envevo.cli", "serve", str(tmp_path), "--port", str(port)],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: port {port} on 127.0.0.1 is in use; choose another with --port"


def test_a_changed_task_is_refused_before_serving(tmp_path):
    import shutil

    export = task_export(tmp_path, {"separate": SEPARATE})
    (export / "tasks" / TASK / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    from envevo.schedule import ScheduleError

    with pytest.raises(ScheduleError, match=rf"'{TASK}'.*changed since the export"):
        create_export_app(export)
    shutil.rmtree(export / "tasks" / TASK)
    with pytest.raises(ScheduleError, match=rf"'{TASK}'.*is missing"):
        create_export_app(export)


def _containers(owner_pid: int) -> list[str]:
    from envevo.runtime import list_containers, owner_id

    return list_containers("podman", owner_id(owner_pid))


def _wait_gone(owner_pid: int, within: float) -> float:
    start = time.monotonic()
    while _containers(owner_pid):
        assert time.monotonic() - start < within, f"sandboxes still up after {within}s: {_containers(owner_pid)}"
        time.sleep(2)
    return time.monotonic() - start


@pytest.fixture()
def server(tmp_path):
    import uvicorn

    from envevo.trainers._live_client import shared_client

    export = task_export(tmp_path, {"separate": SEPARATE})
    port = _free_port()
    app = create_export_app(export, env="podman", max_sessions=4, idle_timeout=IDLE)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", shared_client()._proc.pid  # the worker: its sandboxes carry its pid
    srv.should_exit = True
    thread.join(timeout=30)


def _solution() -> str:
    return "bash <<'ENVEVO_SOLVE'\n" + (SEPARATE / "solution" / "solve.sh").read_text() + "\nENVEVO_SOLVE"


@pytest.mark.sandbox
@pytest.mark.timeout(900)
def test_openenv_clients_get_the_tasks_own_verdict_and_hacks_score_zero(server):
    if not os.environ.get("ENVEVO_RUNTIME_PYTHON"):
        pytest.skip("`make test` runs this with ENVEVO_RUNTIME_PYTHON, envevo's own venv (Harbor is not in this one)")
    url, worker = server

    async def episode(*commands: str) -> float | None:
        async with EnvevoEnvClient(base_url=url, message_timeout_s=600) as client:
            first = await client.reset(task=TASK)
            assert "primes" in first.observation.instruction and not first.done
            for c in commands:
                await client.step(EnvevoAction(command=c))
            state = await client.state()
            assert state.task == TASK and state.lineage == "separate" and state.generation == 0
            result = await client.step(EnvevoAction(submit=True))
            assert result.done and result.observation.metadata.get("error_kind") == "ok"
            return result.reward

    async def rollouts() -> list[float | None]:  # concurrent sessions, as a trainer's batch would open them
        return list(await asyncio.gather(episode(_solution()), episode(TR_SHIM), episode(FORGE)))

    assert asyncio.run(rollouts()) == [1.0, 0.0, 0.0]
    with EnvevoEnvClient(base_url=url, message_timeout_s=600).sync() as client:  # OpenEnv's synchronous client
        client.reset(task=TASK)
        out = client.step(EnvevoAction(command="ls /app; echo marker"))
        assert "marker" in out.observation.output and out.observation.exit_code == 0
        assert client.step(EnvevoAction(submit=True)).reward == 0.0  # nothing done
    assert _containers(worker) == []


CLIENT = textwrap.dedent("""
    import sys, time
    from envevo.trainers.openenv import EnvevoAction, EnvevoEnvClient
    client = EnvevoEnvClient(base_url=sys.argv[1], message_timeout_s=600).sync()
    client.connect()
    client.reset(task=sys.argv[2])
    client.step(EnvevoAction(command="true"))   # the sandbox is up
    print("up", flush=True)
    time.sleep(3600)                              # never asks for the reward
""")


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_a_killed_client_and_one_that_never_asks_for_the_reward_free_their_sandboxes(server):
    if not os.environ.get("ENVEVO_RUNTIME_PYTHON"):
        pytest.skip("`make test` runs this with ENVEVO_RUNTIME_PYTHON, envevo's own venv (Harbor is not in this one)")
    url, worker = server
    clients = [subprocess.Popen([sys.executable, "-c", CLIENT, url, TASK], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}) for _ in range(2)]
    try:
        for c in clients:
            assert c.stdout is not None and c.stdout.readline().strip() == "up"
        assert len(_containers(worker)) >= 2  # both sandboxes are up (a separate verifier has its own later)
        os.kill(clients[0].pid, signal.SIGKILL)  # a trainer killed mid-episode: its connection drops
        # the other stays connected and idle: its episode ends after IDLE seconds without a call
        waited = _wait_gone(worker, within=IDLE + 60)
        assert clients[1].poll() is None  # it was still connected: the idle timeout, not a disconnect, freed it
        print(f"sandboxes freed {waited:.0f}s after the kill")
    finally:
        for c in clients:
            c.kill()
            c.wait()
