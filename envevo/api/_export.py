"""`export(config)`: every committed version of a run as a Harbor dataset folder, a flat JSONL/Parquet index, or the
tasks and index the trainer adapters read; optionally with each task's image built (and pushed)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envevo.api._host import Progress, no_progress
from envevo.errors import UserError
from envevo.runtime import DEFAULT_ENGINE, LOCAL_ENGINES

DEFAULT_REGISTRY = "localhost/envevo"


class ExportFormat(StrEnum):
    HARBOR = "harbor"
    JSONL = "jsonl"
    PARQUET = "parquet"
    RL = "rl"


_FOLDERS = (ExportFormat.HARBOR, ExportFormat.RL)  # formats that write task dirs (and so can name images)


class ExportConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    run: Path
    out: Path
    format: ExportFormat = ExportFormat.HARBOR
    lineage: str | None = Field(None, description="only this lineage")
    force: bool = Field(False, description="replace a previous export at out (never a run or any other folder)")
    images: bool = Field(False, description="build each task's image and name it as docker_image in task.toml")
    registry: str = DEFAULT_REGISTRY
    push: bool = False
    runner: str | None = Field(None, description="the runner that will run the tasks; a task it would run unsafely "
                                                 "is refused before anything is written")
    env: str = DEFAULT_ENGINE

    def check(self) -> None:
        """One line per combination that cannot work, before anything is read or written."""
        if (self.push or self.registry != DEFAULT_REGISTRY) and not self.images:
            raise UserError("--registry and --push go with --images")
        if self.images and self.format not in _FOLDERS:
            raise UserError("--images needs --format harbor or rl: a flat index has no task dirs to name images in")
        if self.push and self.registry.split("/", 1)[0] == "localhost":
            raise UserError("--push needs --registry HOST[:PORT]/PREFIX: 'localhost/…' names this host's image store")
        if self.runner is not None and self.format not in _FOLDERS:
            raise UserError("--runner needs --format harbor or rl: a flat index is not run")
        if self.images and self.env not in LOCAL_ENGINES:
            raise UserError(f"--images builds with a local engine: --env {' or '.join(LOCAL_ENGINES)}, not {self.env!r}")

    @property
    def flat_file(self) -> bool:
        """A flat index written to a file (else to `versions.<format>` in a folder)."""
        return self.format in (ExportFormat.JSONL, ExportFormat.PARQUET) and self.out.suffix == f".{self.format.value}"


async def export(config: ExportConfig, *, progress: Progress = no_progress) -> tuple[dict[str, Any], str, list]:
    """Write the export; returns its summary (the `--json` document), one line saying what was written, and the
    images published (empty without `images`). The caller checks `out` first (`check_output`)."""
    from envevo.schedule import export_rl
    from envevo.store import LineageStore, export_flat, export_harbor
    from envevo.trainers import check_export

    config.check()
    out = str(config.out.expanduser().absolute())
    paths: list[Path] = []
    with LineageStore.open(config.run, create=False) as store:
        if config.runner is not None:
            check_export(store, config.runner, lineage_id=config.lineage, images=config.images)
        if config.format is ExportFormat.HARBOR:
            paths = export_harbor(store, config.out, lineage_id=config.lineage, overwrite=config.force)
            result: dict[str, Any] = {"format": "harbor", "out": out, "tasks": len(paths),
                                      "names": [p.name for p in paths]}
            message = f"wrote {len(paths)} task(s) to {out}"
        elif config.format is ExportFormat.RL:
            paths, index = export_rl(store, config.out, lineage_id=config.lineage, overwrite=config.force)
            result = {"format": "rl", "out": out, "tasks": len(paths), "index": str(index)}
            message = f"wrote {len(paths)} task(s) and the index {index}"
        else:
            target = export_flat(store, config.out, config.format.value, lineage_id=config.lineage)  # type: ignore[arg-type]
            rows = len(store.versions(config.lineage))
            result = {"format": config.format.value, "out": str(target), "rows": rows}
            message = f"wrote {rows} version(s) to {target}"
    published = await _publish(paths, config, progress) if config.images else []
    if published:
        result["images"] = [p.model_dump(mode="json") for p in published]
    return result, message, published


async def _publish(task_dirs: list[Path], config: ExportConfig, progress: Progress) -> list:
    from envevo.sandbox import publish_task

    done = []
    with progress(f"{'building and pushing' if config.push else 'building'} {len(task_dirs)} image set(s)",
                  len(task_dirs)) as advance:
        for d in task_dirs:
            done.append(await publish_task(d, config.env, config.registry, push=config.push))
            advance(d.name)
    return done
