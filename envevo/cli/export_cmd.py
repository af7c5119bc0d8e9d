"""`envevo export RUN`: every committed version of a run as a Harbor dataset folder, a flat JSONL/Parquet index, or
the tasks and index the trainer adapters read; optionally with each task's image built (and pushed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from envevo.api import DEFAULT_REGISTRY, ExportConfig, ExportFormat
from envevo.api import export as api_export
from envevo.cli import _options as o
from envevo.cli._common import check_output, out, print_json, progress, user_errors
from envevo.runtime import DEFAULT_ENGINE

IMAGES = "Prebuilt images (--images)"


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
        rich_help_panel=IMAGES)] = DEFAULT_REGISTRY,
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
    config = ExportConfig(run=run, out=out_path, format=format, lineage=lineage, force=force, images=images,
                          registry=registry, push=push, runner=runner, env=env)
    config.check()
    check_output(out_path, "--out", folder=not config.flat_file)
    result, message, published = asyncio.run(api_export(config, progress=progress))
    if json_out:
        print_json(result)
    else:
        out.print("\n".join([message, *map(_image_line, published)]), highlight=False, soft_wrap=True)


def _image_line(p) -> str:
    line = f"{p.task_dir.name}: {p.agent.reference}"
    if p.verifier is not None:
        line += f" (verifier {p.verifier.reference})"
    return line + "".join(f"; substituted: {s}" for s in p.substitutions)
