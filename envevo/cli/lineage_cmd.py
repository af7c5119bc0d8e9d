"""`envevo lineage show|stats|upgrade`: read a run's lineage store and print its lineages and mutation rates; bring
an older store to this envevo's schema."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    sub_app,
    usage_table,
    user_errors,
)
from envevo.verify import MUTATION

if TYPE_CHECKING:
    from envevo.store import LineageStore

lineage_app = sub_app("Inspect the lineages of an evolve run: generations, ξ length, D_T, mutations, mutation-rate stats.")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def lineage_json(store: LineageStore, lineage_id: str) -> dict[str, Any]:
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
                MUTATION: mutants.get(v.generation),
                "xi": v.trace.pretty() if v.trace else None,
                "trace": v.trace.model_dump(mode="json") if v.trace else None,
                "task_dir": str(store.paths.task_dir(v.task_hash)),
                "usage": spent.get(v.generation, {}),
            }
        )
    status, reason = lin.status.value, lin.reason
    if status == "running" and not store.writer_alive():  # its evolve ended without finishing it (killed, a crash)
        status, reason = "stopped", "no process is running it (killed or crashed); continue with `envevo evolve --resume`"
    return {
        "id": lin.id,
        "seed": lin.seed_name,
        "seed_hash": lin.seed_hash,
        "status": status,
        "reason": reason,
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
    from envevo.analysis import drift_note, unmeasured
    from envevo.store import LineageStore

    notes: list[str] = []
    with LineageStore.open(run, create=False) as store:
        ids = [lineage] if lineage is not None else [lin.id for lin in store.lineages()]
        # A read writes nothing: versions stored without drift are named, and `analyze drift` measures them.
        if missing := sum(len(unmeasured(store, i)) for i in ids):
            notes.append(drift_note(missing, run))
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
        out.print(_lineage_table(lin))
        if lin["usage"]:
            out.print(usage_table("LLM usage per role", lin["usage"]))
    if data["usage_outside_lineages"]:
        out.print(usage_table("LLM usage outside any lineage (seeds extracted and judged before their lineage)",
                              data["usage_outside_lineages"]))


def _lineage_table(lin: dict[str, Any]) -> Table:
    """One lineage's generations as a table: direction, L, D_T and its terms, drift, mutated components, verified."""
    status = lin["status"] + (f": {lin['reason']}" if lin["reason"] else "")
    efforts = {g["effort"] for g in lin["generations"] if g["effort"]}
    effort = f", effort {efforts.pop()}" if len(efforts) == 1 else ""
    table = Table(
        title=escape(f"lineage {lin['id']} (seed {lin['seed']}{effort}) [{status}]"),
        title_justify="left",
        # no outer edge, one space between columns: 11 columns fit 80 characters
        box=box.SIMPLE_HEAD, show_edge=False, padding=0,
        caption=f"{MUTATION_LEGEND}\n{DRIFT_LEGEND}" + (f"\n{KILLED_LEGEND}" if any(
            g[MUTATION] for g in lin["generations"]) else "") + (f" ({measures.pop()})" if len(measures := {
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
            ("[green]yes[/]" if g["verified"] else "[yellow]no[/]") + _killed(g[MUTATION]),
        )
    return table


def _killed(metrics: dict[str, Any] | None) -> str:
    from envevo.analysis import killed_text

    return f" {text}" if (text := killed_text(metrics)) else ""


#: One letter per component, in canonical order, for compact tables.
MUTATION_FLAGS = (("instruction", "I"), ("environment", "E"), ("verification", "V"), ("solution", "S"), ("config", "C"))
KILLED_LEGEND = "verified k/n: of n near-miss solutions run (the mutation verifier), k scored 0"
MUTATION_LEGEND = "mutated: I instruction, E environment, V verification, S solution, C config"
DRIFT_LEGEND = ("drift seed / parent: 1 − cosine similarity of the instruction to the seed's / the parent's; "
                "goal drift: the same for the goal, to the seed's")


def mutation_flags(mutated: list[str]) -> str:
    """``['instruction', 'verification']`` -> ``I·V··``."""
    return "".join(letter if name in mutated else "·" for name, letter in MUTATION_FLAGS)


@lineage_app.command("upgrade")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def upgrade(run: o.RunArg) -> None:
    """Bring a run's store to this envevo's schema (read commands leave an older store as it is and refuse it)."""
    from envevo.store import SCHEMA_VERSION, LineageStore

    with LineageStore.open(run, create=False, hold="envevo lineage upgrade", migrate=True) as store:
        out.print(f"{store.run_dir}: store schema {store.schema_version} (this envevo's: {SCHEMA_VERSION})",
                  highlight=False, soft_wrap=True)


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
