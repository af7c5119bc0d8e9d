"""A task's network policy as Harbor reads it, for callers that describe a sandbox without starting one."""

from __future__ import annotations

import contextlib
from pathlib import Path


def network_policy(task_dir: Path, default: str = "public") -> tuple[str, list[str]]:
    """(network mode, allowed hosts) from the task.toml's `[environment]`, or (`default`, []) when Harbor cannot
    read that task.toml (the caller then keeps its own reading of the table)."""
    with contextlib.suppress(Exception):
        from harbor.models.task.config import TaskConfig

        policy = TaskConfig.model_validate_toml((Path(task_dir) / "task.toml").read_text()).environment.resolve_baseline()
        return policy.network_mode.value, list(policy.allowed_hosts or [])
    return default, []


# ---- per-phase policy in envevo's local environment (Harbor's `set_network_policy`) ----------------------------------
# Harbor gives a task's setup, agent and verifier each a network mode; between phases it asks the environment to
# switch. A local container switches by leaving its networks (`network disconnect`: only loopback is left, open
# connections die) and joining them again. A container started with `--network=none` cannot join one later, so a
# container that will need the network in some phase starts on the engine's default network and leaves it at once
# when its first phase has none.


def needs_network_later(baseline: str, phases: list[str]) -> bool:
    """Whether a container whose first policy is `baseline` must be able to reach the network in a later phase."""
    return baseline == "no-network" and any(p != "no-network" for p in phases)


async def container_networks(engine: str, container: str) -> list[str]:
    """The networks `container` is on now."""
    from envevo.runtime._engine_cli import _run

    code, out, err = await _run(engine, "inspect", "--format", "{{json .NetworkSettings.Networks}}", container,
                                timeout=60)
    if code != 0:
        raise RuntimeError(f"{engine} inspect {container} failed: {err.strip()[-300:]}")
    import json

    data = json.loads(out.strip() or "null") or {}
    return sorted(data) if isinstance(data, dict) else []


async def leave_networks(engine: str, container: str) -> list[str]:
    """Disconnect `container` from every network it is on; the networks it left, to join again."""
    from envevo.runtime._engine_cli import _run

    left = await container_networks(engine, container)
    for net in left:
        code, _, err = await _run(engine, "network", "disconnect", net, container, timeout=60)
        if code != 0:
            raise RuntimeError(f"cannot cut the network of {container} ({engine} network disconnect {net}): "
                               f"{err.strip()[-300:]}")
    return left


async def join_networks(engine: str, container: str, networks: list[str]) -> None:
    from envevo.runtime._engine_cli import _run

    for net in networks:
        code, _, err = await _run(engine, "network", "connect", net, container, timeout=60)
        if code != 0:
            raise RuntimeError(f"cannot give {container} its network back ({engine} network connect {net}): "
                               f"{err.strip()[-300:]}")
