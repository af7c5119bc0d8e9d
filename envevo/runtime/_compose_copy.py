"""Copying out of a compose task's main service the way envevo's local environment does (docs/sandbox.md).

Harbor's compose environments download with `compose cp` or `podman cp CTR:PATH HOSTDIR`, which recreate on the
host whatever the container made: a symlink (a later host write by name follows it, as root), a FIFO (a later host
read or write blocks the run, Ctrl-C included), a sparse giant (expanded on the host disk). Here the main service's
downloads are one `podman cp CTR:PATH -` tar stream that the host extracts itself (envevo/runtime/_archive.py:
regular files and directories only, per-file and per-sandbox caps, a time bound). Sidecar services' downloads (their
declared artifacts and collect-hook outputs) go the same way.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from envevo.runtime import _archive
from envevo.runtime._engine_dialect import DOCKER, EngineDialect

MAIN_SERVICE = "main"


class ArchiveDownloads:
    """Mixin over a Harbor compose environment: the main service's downloads through the archive extraction."""

    _dialect: EngineDialect = DOCKER  # the compose tool's engine (the podman subclass says so)
    _platform: Any  # Harbor's platform helper, which resolves a service's container
    logger: Any

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        await self.service_download_file(source_path, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await self.service_download_dir(source_dir, target_dir)

    async def service_download_file(self, source_path: str, target_path: Path | str, *,
                                    service: str | None = None) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await self._copy_out(source_path, Path(target_path), single_file=True, service=service or MAIN_SERVICE)

    async def service_download_dir(self, source_dir: str, target_dir: Path | str, *, service: str | None = None) -> None:
        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False,
                             service=service or MAIN_SERVICE)

    async def _copy_out(self, source: str, target: Path, *, single_file: bool, service: str = MAIN_SERVICE) -> None:
        budget = self.__dict__.setdefault("_envevo_copy_budget", _archive.CopyBudget())
        container = await self._platform._resolve_service_container(service)

        def run() -> _archive.CopyReport:
            copy = _archive.Copy(self._dialect.name, container, source, budget.limits.timeout_sec)
            return copy.finish(target, single_file=single_file, budget=budget)

        report = await asyncio.to_thread(run)
        for line in report.notes(source):
            self.logger.warning(line)
        _archive.raise_for(report, self._dialect.name, source, single_file=single_file)
