"""Compose tasks on the local engines: Harbor's compose environments, plus no-network enforcement.

Harbor's podman environment rejects `network_mode = "no-network"`. Here the task's default compose network is made
`internal` when internet is off: services still reach each other by name, and nothing reaches outside. A service
that declares its own networks keeps them, so the overlay says so in the trial's notes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.docker.docker import DockerEnvironment
from harbor.environments.podman import PodmanEnvironment

_INTERNAL_OVERLAY = "networks:\n  default:\n    internal: true\n"


class _NoNetworkCompose:
    """Mixin over a Harbor compose environment: accepts no-network tasks and enforces them with an overlay."""

    # Set by Harbor's BaseEnvironment, declared here so the mixin type-checks on its own.
    extra_docker_compose_paths: list[Path]
    _envevo_overlay: Path | None = None

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
        await super().start(force_build)  # type: ignore[misc]

    async def stop(self, delete: bool) -> None:
        try:
            await super().stop(delete)  # type: ignore[misc]
        finally:
            overlay = getattr(self, "_envevo_overlay", None)
            if overlay is not None:
                overlay.unlink(missing_ok=True)
                overlay.parent.rmdir()
                self._envevo_overlay = None


class PodmanComposeEnvironment(_NoNetworkCompose, PodmanEnvironment):
    pass


class DockerComposeEnvironment(_NoNetworkCompose, DockerEnvironment):
    pass
