"""`envevo export RUN`: every committed version of a run as a Harbor dataset folder, a flat JSONL/Parquet index, or
the tasks and index the trainer adapters read; optionally with each task's image built (and pushed)."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from envevo.cli import _options as o
from envevo.cli._common import check_output, out, print_json, progress, user_errors
from envevo.errors import UserError
from envevo.runtime import DEFAULT_ENGINE, LOCAL_ENGINES

IMAGES = "Prebuilt images (--images)"


class ExportFormat(StrEnum):
    HARBOR = "harbor"
    JSONL = "jsonl"
    PARQUET = "parquet"
    RL = "rl"


@user_errors(interrupted="interrupted: the export may be incomplete; re-run the command (with --force for a harbor "
             "or rl folder)")
def export(
    run: o.RunArg,
    out_path: Annotated[Path, o.out_option("harbor: the dataset folder to create. jsonl/parquet: a .jsonl/.parquet "
                                           "file, or a folder for versions.<format>. rl: the folder for tasks/ and "
                                           "index.parquet.")],
    format: Annotated[ExportFormat, typer.Option(  # noqa: A002
        "--format", help="harbor (a dataset folder for `harbor run -p`), jsonl or parquet (a flat index), rl (tasks/ "
        "plus index.parquet for the trainer adapters).")] = ExportFormat.HARBOR,
    lineage: o.LineageFilter = None,
    force: Annotated[bool, typer.Option(
        "--force", help="harbor/rl: replace a previous export at --out (a folder holding its .envevo-export.json); "
        "never a run or any other folder.")] = False,
    images: Annotated[bool, typer.Option(
        "--images", help="harbor/rl: build each task's image (and its separate verifier's) and name it as docker_image "
        "in task.toml, for runners that cannot build (verifiers/prime-rl) and nodes that should not.",
        rich_help_panel=IMAGES)] = False,
    registry: Annotated[str, typer.Option(
        "--registry", help="With --images: the repository prefix, HOST[:PORT]/PREFIX; each task gets <prefix>/<name>.",
        rich_help_panel=IMAGES)] = "localhost/envevo",
    push: Annotated[bool, typer.Option(
        "--push", help="With --images: push to --registry and pin task.toml to the pushed digest (repo@sha256:…). "
        "TLS is verified except for a loopback registry.", rich_help_panel=IMAGES)] = False,
    runner: Annotated[str | None, typer.Option(
        "--runner", help="harbor/rl: the runner that will run the tasks (docs/trainers.md, \"Which runner honours "
        "what\"); refuse, before writing, a task whose separate verifier, artifacts or no-network it would drop, or "
        "images it cannot build without --images.")] = None,
    env: o.Env = DEFAULT_ENGINE,
    json_out: o.Json = False,
) -> None:
    """Export every committed version: a Harbor dataset folder (<lineage>__g<NN>), a JSONL/Parquet index, or with
    --format rl the tasks plus index.parquet that the trainer adapters read (docs/trainers.md)."""
    from envevo.schedule import export_rl
    from envevo.store import LineageStore, export_flat, export_harbor
    from envevo.trainers import check_export

    if (push or registry != "localhost/envevo") and not images:
        raise UserError("--registry and --push go with --images")
    if images and format not in (ExportFormat.HARBOR, ExportFormat.RL):
        raise UserError("--images needs --format harbor or rl: a flat index has no task dirs to name images in")
    if push and registry.split("/", 1)[0] == "localhost":
        raise UserError("--push needs --registry HOST[:PORT]/PREFIX: 'localhost/…' names this host's image store")
    if runner is not None and format not in (ExportFormat.HARBOR, ExportFormat.RL):
        raise UserError("--runner needs --format harbor or rl: a flat index is not run")
    if images and env not in LOCAL_ENGINES:
        raise UserError(f"--images builds with a local engine: --env {' or '.join(LOCAL_ENGINES)}, not {env!r}")
    flat_file = format in (ExportFormat.JSONL, ExportFormat.PARQUET) and out_path.suffix == f".{format.value}"
    check_output(out_path, "--out", folder=not flat_file)
    with LineageStore.open(run, create=False) as store:
        if runner is not None:
            check_export(store, runner, lineage_id=lineage, images=images)
        if format is ExportFormat.HARBOR:
            paths = export_harbor(store, out_path, lineage_id=lineage, overwrite=force)
            result: dict[str, Any] = {
                "format": "harbor",
                "out": str(out_path.expanduser().absolute()),
                "tasks": len(paths),
                "names": [p.name for p in paths],
            }
            message = f"wrote {len(paths)} task(s) to {result['out']}"
        elif format is ExportFormat.RL:
            paths, index = export_rl(store, out_path, lineage_id=lineage, overwrite=force)
            result = {"format": "rl", "out": str(out_path.expanduser().absolute()), "tasks": len(paths), "index": str(index)}
            message = f"wrote {len(paths)} task(s) and the index {index}"
        else:
            target = export_flat(store, out_path, format.value, lineage_id=lineage)  # type: ignore[arg-type]
            rows = len(store.versions(lineage))
            result = {"format": format.value, "out": str(target), "rows": rows}
            message = f"wrote {rows} version(s) to {target}"
    if images:
        published = _publish(paths, env, registry, push)
        result["images"] = [p.model_dump(mode="json") for p in published]
        message += "\n" + "\n".join(_image_line(p) for p in published)
    if json_out:
        print_json(result)
    else:
        out.print(message, highlight=False, soft_wrap=True)


def _publish(task_dirs: list[Path], env: str, registry: str, push: bool) -> list:
    from envevo.sandbox import publish_task

    async def each() -> list:
        done = []
        with progress(f"{'building and pushing' if push else 'building'} {len(task_dirs)} image set(s)",
                      len(task_dirs)) as advance:
            for d in task_dirs:
                done.append(await publish_task(d, env, registry, push=push))
                advance(d.name)
        return done

    return asyncio.run(each())


def _image_line(p) -> str:
    line = f"{p.task_dir.name}: {p.agent.reference}"
    if p.verifier is not None:
        line += f" (verifier {p.verifier.reference})"
    return line + "".join(f"; substituted: {s}" for s in p.substitutions)
