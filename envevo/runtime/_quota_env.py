"""Quotas at the sandbox itself: any Harbor environment class, wrapped so that each start takes a slot of the
process's limiter (`--max-sandboxes`, `--start-rate`) and each stop gives it back, and a start the provider
refuses (quota, 429, 5xx, a dropped connection) is retried after a backoff instead of failing the trial.

Counting here, not per trial, counts every sandbox: a task with a separate verifier environment starts two.
Harbor loads the wrapped class by import path; the name resolves in the process that runs the trial.
"""

from __future__ import annotations

import importlib
from typing import Any

from envevo.runtime._envs import EnvChoice
from envevo.runtime._quota import backoff, is_provider_error, limiter, provider_wait, quota_active


class StartRefused(Exception):
    """The provider refused a sandbox through every backoff attempt."""


_WRAPPED: dict[str, type] = {}
_BASES: dict[str, str] = {}  # wrapper name -> what it wraps ("module:Class" or a Harbor type)


def _base_class(target: str) -> type:
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.environment_type import EnvironmentType

    if ":" in target:
        module, _, name = target.partition(":")
        cls: type = getattr(importlib.import_module(module), name)
        return cls
    return EnvironmentFactory.get_environment_class(EnvironmentType(target))


def _wrap(base: Any) -> type:
    async def start(self: Any, force_build: bool) -> None:
        attempt = 0
        while True:
            await limiter().acquire()
            try:
                await base.start(self, force_build)
            except Exception as exc:
                await limiter().release()
                if not is_provider_error(type(exc).__name__, str(exc)):
                    raise
                if attempt >= backoff().attempts:  # given up here: the trial is not retried for it again
                    raise StartRefused(f"{attempt + 1} starts refused, the last: {type(exc).__name__}: {exc}") from exc
                await provider_wait(attempt)
                attempt += 1
                continue
            self._envevo_slot = True
            return

    async def stop(self: Any, delete: bool) -> None:
        try:
            await base.stop(self, delete)
        finally:
            if getattr(self, "_envevo_slot", False):
                self._envevo_slot = False
                await limiter().release()

    return type(f"Quota{base.__name__}", (base,), {"start": start, "stop": stop, "__module__": __name__})


def quota_import_path(target: str) -> str:
    """The import path of `target` (an import path or a Harbor environment type) under the process's quota."""
    name = "Quota_" + "".join(c if c.isalnum() else "_" for c in target)
    _BASES[name] = target
    return f"{__name__}:{name}"


def __getattr__(name: str) -> type:
    if name not in _BASES:
        raise AttributeError(name)
    base = _base_class(_BASES[name])  # resolved each time: a registry entry may change (a test's fake, an extra)
    wrapped = _WRAPPED.get(name)
    if wrapped is None or wrapped.__bases__[0] is not base:
        wrapped = _WRAPPED[name] = _wrap(base)
    return wrapped


def environment_config(choice: EnvChoice, env: str, extra: list[Any]) -> Any:
    """Harbor's EnvironmentConfig for a trial's or a session's sandbox. A remote sandbox always goes through the
    quota wrapper (provider backoff), a local one when a quota is set, so every sandbox of the run counts."""
    from harbor.models.trial.config import EnvironmentConfig

    target = choice.import_path or choice.harbor_type or env
    if quota_active() or choice.engine is None:
        return EnvironmentConfig(import_path=quota_import_path(target), extra_docker_compose=extra)
    if choice.import_path:
        return EnvironmentConfig(import_path=choice.import_path, extra_docker_compose=extra)
    return EnvironmentConfig(type=choice.harbor_type, extra_docker_compose=extra)

