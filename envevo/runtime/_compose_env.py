"""Compose tasks on the local engines: Harbor's compose environments, plus no-network enforcement.

Harbor's podman environment rejects `network_mode = "no-network"`. Here the task's default compose network is made
`internal` when internet is off: services still reach each other by name, and nothing reaches outside. A service
that declares its own networks keeps them, so the overlay says so in the trial's notes.

When the host's CA bundle is trusted (envevo/runtime/_host_ca.py), a second overlay gives every service the trust
variables and the read-only mount at run time, and every service that builds (podman) a copy of its Dockerfile that
declares them as ARGs, with the values as build args; podman-compose mounts the folder into the RUN steps
(`--podman-build-args`). The task's files are not changed.

The main service's downloads go through envevo's archive extraction (envevo/runtime/_compose_copy.py), not Harbor's
`compose cp` into the host dir.

The compose tool runs without the host's environment: it interpolates `${VAR}` in the task's compose file from its
own environment, so a task could read any host secret that way. It gets what the tool itself needs (PATH, HOME,
the engine's and the proxy's settings) and the variables the user passed (`--pass-env`), nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.definition import should_use_prebuilt_docker_image
from harbor.environments.docker.docker import DockerEnvironment
from harbor.environments.podman import PodmanEnvironment

from envevo.runtime import _host_ca
from envevo.runtime._compose_copy import ArchiveDownloads
from envevo.runtime._engine_dialect import DOCKER, PODMAN, EngineDialect
from envevo.task import passed_names

_INTERNAL_OVERLAY = "networks:\n  default:\n    internal: true\n"

# What the compose tool and the engine under it read from the environment; no task may see anything else of the host's.
_TOOL_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM", "XDG_RUNTIME_DIR",
                       "XDG_CONFIG_HOME", "XDG_DATA_HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT",
                       "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "DOCKER_BUILDKIT", "ENVEVO_HOST_CA_BUNDLE",
                       "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
                       "all_proxy"})
_TOOL_PREFIXES = ("LC_", "CONTAINERS_", "CONTAINER_", "PODMAN_", "BUILDAH_")


def compose_host_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The part of the host's environment the compose tool may see: its own settings and the passed variables."""
    env = dict(os.environ if environ is None else environ)
    passed = passed_names(env)
    return {k: v for k, v in env.items() if k in _TOOL_ENV or k.startswith(_TOOL_PREFIXES) or k in passed}


class _NoNetworkCompose:
    """Mixin over a Harbor compose environment: accepts no-network tasks and enforces them with an overlay."""

    # Set by Harbor's BaseEnvironment, declared here so the mixin type-checks on its own.
    extra_docker_compose_paths: list[Path]
    environment_dir: Path
    task_env_config: Any
    _envevo_overlay: Path | None = None
    _envevo_trust: Path | None = None  # the folder of the trust overlay and the Dockerfile copies
    _envevo_build_volume: str | None = None
    _dialect: EngineDialect = DOCKER

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        caps = super().capabilities  # type: ignore[misc]
        return caps.model_copy(update={"disable_internet": True})

    async def start(self, force_build: bool) -> None:
        if self._network_disabled and not getattr(self, "_envevo_overlay", None):  # type: ignore[attr-defined]
            overlay = Path(tempfile.mkdtemp(prefix="envevo-nonet-")) / "no-network.yaml"
            overlay.write_text(_INTERNAL_OVERLAY)
            self._envevo_overlay = overlay
            self.extra_docker_compose_paths = [*self.extra_docker_compose_paths, overlay]
        if _host_ca.bundle() is not None and not getattr(self, "_envevo_trust", None):
            self._trust_host_ca(force_build)
        await super().start(force_build)  # type: ignore[misc]

    def _trust_host_ca(self, force_build: bool) -> None:
        folder = Path(tempfile.mkdtemp(prefix="envevo-ca-compose-"))
        self._envevo_trust = folder
        overlay = folder / "host-ca.json"
        builds = self._dialect.mounts_in_build
        prebuilt = should_use_prebuilt_docker_image(self.environment_dir, docker_image=self.task_env_config.docker_image,
                                                    force_build=force_build)
        overlay.write_text(json.dumps(trust_overlay(self.environment_dir, folder, builds=builds, prebuilt=prebuilt)))
        self.extra_docker_compose_paths = [*self.extra_docker_compose_paths, overlay]
        if builds:
            self._envevo_build_volume = _host_ca.volume_args()[1]

    def _compose_env_vars(self, include_os_env: bool = True) -> dict[str, str]:
        env: dict[str, str] = super()._compose_env_vars(include_os_env=False)  # type: ignore[misc]
        return {**compose_host_env(), **env} if include_os_env else env

    async def _run_docker_compose_command(self, command: list[str], *args: Any, **kwargs: Any) -> Any:
        volume = getattr(self, "_envevo_build_volume", None)
        if volume and command[:1] == ["build"]:
            # A global option of podman-compose (also through `podman compose`), so it goes before the subcommand.
            command = [f"--podman-build-args=--volume={volume}", *command]
        return await super()._run_docker_compose_command(command, *args, **kwargs)  # type: ignore[misc]

    async def stop(self, delete: bool) -> None:
        try:
            await super().stop(delete)  # type: ignore[misc]
        finally:
            overlay = getattr(self, "_envevo_overlay", None)
            if overlay is not None:
                overlay.unlink(missing_ok=True)
                overlay.parent.rmdir()
                self._envevo_overlay = None
            trust = getattr(self, "_envevo_trust", None)
            if trust is not None:
                shutil.rmtree(trust, ignore_errors=True)
                self._envevo_trust = None


# podman-compose's order when a build names no Dockerfile.
_DOCKERFILES = ("Containerfile", "ContainerFile", "containerfile", "Dockerfile", "DockerFile", "dockerfile")


def _services(env_dir: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load((env_dir / "docker-compose.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return {}
    services = data.get("services") if isinstance(data, dict) else None
    return services if isinstance(services, dict) else {}


def _dockerfile(env_dir: Path, build: Any) -> Path | None:
    """The Dockerfile a service's `build` names (its context relative to the task's compose file), if on disk."""
    spec = {"context": build} if isinstance(build, str) else build if isinstance(build, dict) else None
    if spec is None or "dockerfile_inline" in spec or "${" in str(spec.get("context", ".")):
        return None
    context = (env_dir / str(spec.get("context", "."))).resolve()
    names = [str(spec["dockerfile"])] if spec.get("dockerfile") else _DOCKERFILES
    return next((context / n for n in names if (context / n).is_file()), None)


def trust_overlay(env_dir: Path, folder: Path, *, builds: bool, prebuilt: bool) -> dict[str, Any]:
    """The compose overlay that makes every service of the task trust the host's CA bundle; Dockerfile copies for
    its builds are written into ``folder``."""
    services = _services(env_dir)
    env, volumes = _host_ca.ca_env(), [_host_ca.volume_args()[1]]
    out: dict[str, Any] = {}
    for name in dict.fromkeys(["main", *services]):
        service: dict[str, Any] = {"environment": env, "volumes": volumes}
        spec = services.get(name) or {}
        build = spec.get("build") if isinstance(spec, dict) else None
        if name == "main" and build is None and not prebuilt:
            build = "."  # Harbor's own build file: the environment folder
        dockerfile = _dockerfile(env_dir, build) if builds and build is not None else None
        if dockerfile is not None:
            service["build"] = {"dockerfile": str(_host_ca.rewritten_dockerfile(dockerfile, folder)), "args": env}
        out[name] = service
    return {"services": out}


class PodmanComposeEnvironment(ArchiveDownloads, _NoNetworkCompose, PodmanEnvironment):
    _dialect = PODMAN


class DockerComposeEnvironment(ArchiveDownloads, _NoNetworkCompose, DockerEnvironment):
    pass
