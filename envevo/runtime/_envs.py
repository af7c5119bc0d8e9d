"""Which environment runs a trial, from the user's `--env` and the task.

- `podman` / `docker` (the default): envevo's own local environment for Dockerfile and prebuilt-image tasks,
  Harbor's compose environment (with no-network enforcement) for compose tasks;
- `bwrap`: envevo's bubblewrap environment (envevo/runtime/_bwrap_env.py) for tasks without compose and without
  network in any phase; any other task runs on podman, and the first such task says so once (a log warning);
- `harbor:podman` / `harbor:docker`: Harbor's own environments, unchanged (compose for every task);
- any other Harbor type (daytona, modal, e2b, runloop, gke, …): passed through to Harbor;
- `pkg.module:Class`: a custom Harbor environment.

Harbor is not imported here: the list of its environment types is read lazily, only to check a name.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path

from pydantic import BaseModel

from envevo.runtime._engine_dialect import BACKENDS, BWRAP, DOCKER, LOCAL_ENGINES, PODMAN, SandboxBackend

COMPOSE_FILE = "docker-compose.yaml"  # the name Harbor's compose environments read
_LOCAL = {
    PODMAN.name: "envevo.runtime._local_env:PodmanLocalEnvironment",
    DOCKER.name: "envevo.runtime._local_env:DockerLocalEnvironment",
}
_BACKEND_ENVS = {BWRAP.name: "envevo.runtime._bwrap_env:BwrapEnvironment"}
_FELL_BACK: set[str] = set()  # backends that already said a task went to podman
_log = logging.getLogger(__name__)
_COMPOSE = {
    PODMAN.name: "envevo.runtime._compose_env:PodmanComposeEnvironment",
    DOCKER.name: "envevo.runtime._compose_env:DockerComposeEnvironment",
}


class EnvChoice(BaseModel):
    """How a trial's environment is configured for Harbor: an import path or a Harbor type."""

    import_path: str | None = None
    harbor_type: str | None = None
    engine: str | None = None  # the local engine behind it, if any
    compose: bool = False


@cache
def harbor_types() -> tuple[str, ...]:
    from harbor.models.environment_type import EnvironmentType

    return tuple(sorted(t.value for t in EnvironmentType))


def uses_compose(task_dir: Path | None) -> bool:
    return task_dir is not None and (Path(task_dir) / "environment" / COMPOSE_FILE).is_file()


def _unserved(backend: SandboxBackend, task_dir: Path | None) -> str | None:
    """Why `backend` cannot run the task (compose, or a phase with network), or None. Without a task: None."""
    if task_dir is None:
        return None
    if uses_compose(task_dir):
        return "it uses compose"
    modes = _network_modes(Path(task_dir))
    if modes is None:
        return "its task.toml could not be read for its network policy"
    if any(m != "no-network" for m in modes):
        return f"it allows the network ({', '.join(sorted(set(modes) - {'no-network'}))})"
    return None


def _network_modes(task_dir: Path) -> list[str] | None:
    """Every network mode a task's config names (the environment's baseline and any phase's), or None."""
    try:
        from harbor.models.task.config import TaskConfig

        config = TaskConfig.model_validate_toml((task_dir / "task.toml").read_text())
    except Exception:  # noqa: BLE001 -- an unreadable task.toml fails at the trial with Harbor's own message
        return None
    modes = [config.environment.resolve_baseline().network_mode.value]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "network_mode" and value is not None:
                    modes.append(getattr(value, "value", str(value)))
                elif key == "allow_internet" and value:
                    modes.append("public")
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(config.model_dump())
    return modes


def resolve_env(env: str, task_dir: Path | None = None) -> EnvChoice:
    """The environment for `env` on `task_dir`; a ValueError (one line) for a name nothing can run."""
    if env in BACKENDS:
        backend = BACKENDS[env]
        why = _unserved(backend, task_dir)
        if why is None:
            return EnvChoice(import_path=_BACKEND_ENVS[env], engine=backend.images.name)
        if env not in _FELL_BACK:
            _FELL_BACK.add(env)
            _log.warning("--env %s runs %s; %s runs on %s (%s), as will any other such task", env, backend.serves,
                         Path(task_dir or ".").name, backend.images.name, why)
        env = backend.images.name
    if env in LOCAL_ENGINES:
        if uses_compose(task_dir):
            return EnvChoice(import_path=_COMPOSE[env], engine=env, compose=True)
        return EnvChoice(import_path=_LOCAL[env], engine=env)
    if env.startswith("harbor:"):
        name = env.removeprefix("harbor:")
        if name not in harbor_types():
            raise ValueError(f"unknown Harbor environment {name!r}; Harbor has: {', '.join(harbor_types())}")
        return EnvChoice(harbor_type=name, engine=name if name in LOCAL_ENGINES else None, compose=name in LOCAL_ENGINES)
    if ":" in env:
        return EnvChoice(import_path=env)
    if env in harbor_types():
        return EnvChoice(harbor_type=env)
    raise ValueError(
        f"unknown --env {env!r}: use podman or docker (envevo's local sandbox), bwrap (a lighter one for tasks "
        "without network or compose), harbor:<type> for Harbor's own, "
        f"a cloud environment ({', '.join(t for t in harbor_types() if t not in LOCAL_ENGINES)}), or pkg.module:Class"
    )


def check_env(env: str) -> str | None:
    """Validate `env` before any trial starts: a name Harbor or envevo knows, or an importable custom class.

    Returns the local engine behind it (podman or docker), or None for cloud and custom environments."""
    choice = resolve_env(env)
    if choice.import_path and env not in LOCAL_ENGINES and env not in BACKENDS:
        module, _, cls = env.partition(":")
        try:
            import importlib

            getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot load the environment {env!r}: {exc}") from None
    return choice.engine
