"""`envevo lineage show|stats` and `envevo export`: read a run's lineage store, print it, export it."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    INTERRUPTED_NO_SANDBOX,
    err,
    fmt,
    out,
    print_json,
    progress,
    sub_app,
    usage_table,
    user_errors,
)
from envevo.errors import UserError

lineage_app = sub_app("Inspect the lineages of an evolve run: generations, ξ length, D_T, mutations, mutation-rate stats.")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def lineage_json(store: Any, lineage_id: str) -> dict[str, Any]:
    """The `lineage show --json` object of one lineage."""
    from envevo.analysis import mutant_scores
    from envevo.store import version_fields

    lin = store.lineage(lineage_id)
    tried: dict[int, int] = {}
    for c in store.candidates(lineage_id):
        tried[c.generation] = tried.get(c.generation, 0) + 1
    mutants = mutant_scores(store, lineage_id)
    spent: dict[int, dict[str, dict[str, Any]]] = {}  # generation -> role -> tokens and cost
    for u in store.usage(lineage_id):
        s = spent.setdefault(u.generation or 0, {}).setdefault(u.role, {"input_tokens": 0, "output_tokens": 0, "cost_usd": None})
        s["input_tokens"] += u.input_tokens
        s["output_tokens"] += u.output_tokens
        if u.cost_usd is not None:
            s["cost_usd"] = (s["cost_usd"] or 0.0) + u.cost_usd
    generations = []
    for v in store.versions(lineage_id):
        generations.append(
            {
                **version_fields(v),
                "candidates": tried.get(v.generation, 0),
                "mutation": mutants.get(v.generation),
                "xi": v.trace.pretty() if v.trace else None,
                "trace": v.trace.model_dump(mode="json") if v.trace else None,
                "task_dir": str(store.paths.task_dir(v.task_hash)),
                "usage": spent.get(v.generation, {}),
            }
        )
    return {
        "id": lin.id,
        "seed": lin.seed_name,
        "seed_hash": lin.seed_hash,
        "status": lin.status.value,
        "reason": lin.reason,
        "latest_generation": lin.latest_generation,
        "generations": generations,
        "usage": [t.model_dump(mode="json") for t in store.usage_totals(lineage_id)],
    }


@lineage_app.command("show")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def show(
    run: o.RunArg,
    lineage: o.LineageFilter = None,
    json_out: o.Json = False,
) -> None:
    """Per lineage: each generation's direction, ξ length L, D_T and its terms, mutated components, verification.

    --json prints one object: {run, lineages: [{…, generations: […]}]}."""
    from envevo.errors import UserError
    from envevo.store import LineageStore

    notes: list[str] = []
    with LineageStore.open(run, create=False) as store:
        ids = [lineage] if lineage is not None else [lin.id for lin in store.lineages()]
        try:  # versions stored before drift was recorded get it now, once
            missing = sum(v.drift is None for i in ids for v in store.versions(i))
            if missing:
                err.print(f"measuring the semantic drift of {missing} version(s) stored without it (once; "
                          "a few seconds per version on a CPU)…", highlight=False)
            for i in ids:
                store.ensure_drift(i)
        except UserError as e:
            notes.append(f"drift not measured: {e}")
        data: dict[str, Any] = {"run": str(store.run_dir), "lineages": [lineage_json(store, i) for i in ids],
                                # seeds extracted and judged before their lineage existed: tokens spent all the same
                                "usage_outside_lineages": [t.model_dump(mode="json")
                                                           for t in store.usage_totals(outside_lineages=True)]}
        if notes:
            data["notes"] = notes
    if json_out:
        print_json(data)
        return
    for note in notes:
        err.print(escape(note), highlight=False)
    if not data["lineages"]:
        err.print(f"run {data['run']} has no lineages yet")
    for lin in data["lineages"]:
        status = lin["status"] + (f": {lin['reason']}" if lin["reason"] else "")
        efforts = {g["effort"] for g in lin["generations"] if g["effort"]}
        effort = f", effort {efforts.pop()}" if len(efforts) == 1 else ""
        table = Table(
            title=escape(f"lineage {lin['id']} (seed {lin['seed']}{effort}) [{status}]"),
            title_justify="left",
            # no outer edge, one space between columns: 11 columns fit 80 characters
            box=box.SIMPLE_HEAD, show_edge=False, padding=0,
            caption=f"{MUTATION_LEGEND}\n{DRIFT_LEGEND}" + (f"\n{KILLED_LEGEND}" if any(
                g["mutation"] for g in lin["generations"]) else "") + (f" ({measures.pop()})" if len(measures := {
                g["drift_measure"] for g in lin["generations"] if g["drift_measure"]}) == 1 else ""),
            caption_justify="left",
        )
        for col in ("gen", "direction", "L", "D_T", "novelty", "rarity", "drift\nseed", "drift\nparent", "goal\ndrift",
                    "mutated", "verified"):
            table.add_column(col, justify="left" if col in ("direction", "mutated", "verified") else "right")
        for g in lin["generations"]:
            direction = g["direction"] or "seed"
            if not effort and g["effort"]:
                direction += f"/{g['effort']}"
            table.add_row(
                f"{g['generation']:02d}",
                direction,
                "-" if g["L"] is None else str(g["L"]),
                fmt(g["D_T"]),
                fmt(g["scenario_novelty"]),
                fmt(g["skill_rarity"]),
                fmt(g["drift_seed"]),
                fmt(g["drift_parent"]),
                fmt(None if g["goal_sim_seed"] is None else 1 - g["goal_sim_seed"]),
                mutation_flags(g["mutated"]),
                ("[green]yes[/]" if g["verified"] else "[yellow]no[/]") + _killed(g["mutation"]),
            )
        out.print(table)
        if lin["usage"]:
            out.print(usage_table("LLM usage per role", lin["usage"]))
    if data["usage_outside_lineages"]:
        out.print(usage_table("LLM usage outside any lineage (seeds extracted and judged before their lineage)",
                              data["usage_outside_lineages"]))



def _killed(metrics: dict[str, Any] | None) -> str:
    from envevo.analysis import killed_text

    return f" {text}" if (text := killed_text(metrics)) else ""


#: One letter per component, in canonical order, for compact tables.
MUTATION_FLAGS = (("instruction", "I"), ("environment", "E"), ("verification", "V"), ("solution", "S"), ("config", "C"))
IMAGES = "Prebuilt images (--images)"
KILLED_LEGEND = "verified k/n: of n near-miss solutions run (the mutation verifier), k scored 0"
MUTATION_LEGEND = "mutated: I instruction, E environment, V verification, S solution, C config"
DRIFT_LEGEND = ("drift seed / parent: 1 − cosine similarity of the instruction to the seed's / the parent's; "
                "goal drift: the same for the goal, to the seed's")


def mutation_flags(mutated: list[str]) -> str:
    """``['instruction', 'verification']`` -> ``I·V··``."""
    return "".join(letter if name in mutated else "·" for name, letter in MUTATION_FLAGS)


@lineage_app.command("stats")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def stats(
    runs: Annotated[list[Path], typer.Argument(help="One or more run directories; their lineages are pooled.")],
    json_out: o.Json = False,
) -> None:
    """Mutation rates per generation and component (the paper's Figure 4), their means, and rates per direction and effort."""
    from envevo.analysis import RATE_COMPONENTS, mutation_rates

    result = mutation_rates(runs)
    if json_out:
        print_json(result.model_dump(mode="json"))
        return
    table = Table(
        title=f"mutation rates: {result.lineages} lineage(s) in {len(result.runs)} run(s)",
        caption="fraction of the n lineages at generation g whose component changed from g−1; "
        "total: instruction, environment or verification changed",
        caption_justify="left",
        title_justify="left",
    )
    table.add_column("gen", justify="right")
    table.add_column("n", justify="right")
    for c in RATE_COMPONENTS:
        table.add_column(c, justify="right")
    table.add_column("total", justify="right")
    for g in result.generations:
        table.add_row(f"{g.generation:02d}", str(g.n), *(_pct(g.rates[c]) for c in RATE_COMPONENTS), _pct(g.total))
    table.add_section()
    table.add_row("mean", "", *(_pct(result.mean[c]) for c in RATE_COMPONENTS), _pct(result.mean_total), style="bold")
    out.print(table)
    for title, keys, rows in (("by direction", ("direction",), result.by_direction),
                              ("by direction and effort", ("direction", "effort"), result.by_direction_effort)):
        if rows:
            out.print(_pooled_rates_table(f"{title} (pooled over generations)", keys, rows))
    if result.by_direction_effort:
        out.print(_pooled_rates_table("files kept by direction and effort: share of the children's files "
                                      "byte-identical to their parent's", ("direction", "effort"),
                                      result.by_direction_effort, kept=True))


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
                                           "file, or a folder for versions.<format>.")],
    format: Annotated[ExportFormat, typer.Option(  # noqa: A002
        "--format", help="harbor (a dataset folder for `harbor run -p`), jsonl or parquet (a flat index), rl (tasks/ "
        "plus index.parquet for the trainer adapters).")] = ExportFormat.HARBOR,
    lineage: o.LineageFilter = None,
    force: Annotated[bool, typer.Option("--force", help="harbor: replace an existing, non-empty dataset folder.")] = False,
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
    env: o.Env = "podman",
    json_out: o.Json = False,
) -> None:
    """Export every committed version: a Harbor dataset folder (<lineage>__g<NN>), or a JSONL/Parquet index."""
    from envevo.schedule import export_rl
    from envevo.store import LineageStore, export_flat, export_harbor

    if (push or registry != "localhost/envevo") and not images:
        raise UserError("--registry and --push go with --images")
    if images and format not in (ExportFormat.HARBOR, ExportFormat.RL):
        raise UserError("--images needs --format harbor or rl: a flat index has no task dirs to name images in")
    if push and registry.split("/", 1)[0] == "localhost":
        raise UserError("--push needs --registry HOST[:PORT]/PREFIX: 'localhost/…' names this host's image store")
    if images and env not in ("podman", "docker"):
        raise UserError(f"--images builds with a local engine: --env podman or docker, not {env!r}")
    with LineageStore.open(run, create=False) as store:
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


def _pooled_rates_table(title: str, keys: tuple[str, ...], rows: list, *, kept: bool = False) -> Table:
    """Pooled over generations, one row per value of `keys` (direction, or direction and effort): the mutation rates,
    or with `kept` the share of the children's files left byte-identical, per component."""
    from envevo.analysis import RATE_COMPONENTS

    table = Table(title=title, title_justify="left")
    for k in keys:
        table.add_column(k)
    table.add_column("n", justify="right")
    for c in RATE_COMPONENTS:
        table.add_column(c, justify="right")
    if not kept:
        table.add_column("total", justify="right")
    for r in rows:
        cells = [_pct(r.kept.get(c)) for c in RATE_COMPONENTS] if kept else [
            *(_pct(r.rates[c]) for c in RATE_COMPONENTS), _pct(r.total)]
        table.add_row(*(getattr(r, k) for k in keys), str(r.n), *cells)
    return table
