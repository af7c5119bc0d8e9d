"""`--env bwrap` serves only what it can enforce: a task with compose or with network in any phase runs on podman,
and the first such task says so once."""

from __future__ import annotations

import logging
from pathlib import Path

from envevo.runtime import BWRAP, PODMAN, _envs, resolve_env


def _task(root: Path, name: str, toml: str, compose: bool = False) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    if compose:
        (task / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    (task / "task.toml").write_text(toml)
    return task


OFFLINE = '[environment]\nnetwork_mode = "no-network"\n'


def test_bwrap_takes_offline_tasks_and_sends_the_others_to_podman_saying_so_once(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(_envs, "_FELL_BACK", set())
    offline = _task(tmp_path, "offline", OFFLINE)
    separate = _task(tmp_path, "separate", OFFLINE + '\n[verifier]\nenvironment_mode = "separate"\n')
    online = _task(tmp_path, "online", '[environment]\nnetwork_mode = "public"\n')
    default = _task(tmp_path, "default", "[verifier]\ntimeout_sec = 10.0\n")  # Harbor's default: public
    compose = _task(tmp_path, "compose", OFFLINE, compose=True)
    with caplog.at_level(logging.WARNING):
        for task in (offline, separate):
            choice = resolve_env(BWRAP.name, task)
            assert choice.import_path and choice.import_path.endswith(":BwrapEnvironment"), task.name
            assert choice.engine == PODMAN.name  # the images, the sweeper and the preflight stay podman's
        assert resolve_env(BWRAP.name, online) == resolve_env(PODMAN.name, online)
        assert resolve_env(BWRAP.name, default) == resolve_env(PODMAN.name, default)
        assert resolve_env(BWRAP.name, compose) == resolve_env(PODMAN.name, compose)
    said = [r.getMessage() for r in caplog.records if BWRAP.name in r.getMessage()]
    assert len(said) == 1 and "online" in said[0] and "allows the network" in said[0], said


def test_a_phase_with_network_is_network(tmp_path):
    task = _task(tmp_path, "phase", OFFLINE + '\n[verifier]\nnetwork_mode = "public"\n')
    modes = _envs._network_modes(task)
    assert modes is not None and "public" in modes
