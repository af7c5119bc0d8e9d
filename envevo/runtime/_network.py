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
