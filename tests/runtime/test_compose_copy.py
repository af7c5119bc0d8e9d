"""A compose task's main-service downloads go through envevo's archive extraction, not `compose cp` into the host
dir: what the container planted (a symlink to a host file, a FIFO) is dropped on the way out (fake engine on PATH)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading

from envevo.runtime import PODMAN
from envevo.runtime._compose_copy import ArchiveDownloads
from tests.runtime.test_local_env_calls import engine  # noqa: F401 (the fake engine fixture)


class _Platform:
    async def _resolve_service_container(self, service: str) -> str:
        return "ctr" if service == "main" else f"ctr-{service}"


class _Compose(ArchiveDownloads):
    _dialect = PODMAN

    def __init__(self):
        self._platform = _Platform()
        self.logger = logging.getLogger("test")


def test_links_and_fifos_in_the_containers_logs_never_reach_the_host(tmp_path, engine):  # noqa: F811
    logs = tmp_path / "container" / "logs" / "agent"
    logs.mkdir(parents=True)
    (logs / "trajectory.json").write_text("[]\n")
    outside = tmp_path / "host-file"
    outside.write_text("host\n")
    os.symlink(outside, logs / "exit-code.txt")
    os.mkfifo(logs / "script.log")
    target = tmp_path / "trial" / "agent"
    done = threading.Event()

    def run():
        asyncio.run(_Compose().download_dir("/logs/agent", target))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(30), "the download blocked"
    assert (target / "trajectory.json").read_text() == "[]\n"
    assert not os.path.lexists(target / "exit-code.txt") and not os.path.lexists(target / "script.log")
    assert [a[:2] for a in engine("cp")] == [["cp", "ctr:/logs/agent"]]


def test_a_sidecars_artifact_comes_out_the_same_way(tmp_path, engine):  # noqa: F811
    (tmp_path / "container" / "data").mkdir()
    (tmp_path / "container" / "data" / "dump.sql").write_text("x\n")
    os.mkfifo(tmp_path / "container" / "data" / "pipe")
    target = tmp_path / "arts" / "data"
    asyncio.run(_Compose().service_download_dir("/data", target, service="db"))
    assert (target / "dump.sql").read_text() == "x\n" and not os.path.lexists(target / "pipe")
    assert [a[:2] for a in engine("cp")] == [["cp", "ctr-db:/data"]]
