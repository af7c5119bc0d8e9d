"""`envevo difficulty TASK|RUN`: ξ, L, scenario novelty, skill rarity and D_T under a named p_T estimator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli._common import out, print_json, user_errors
from envevo.errors import UserError


def task_rows(paths: list[Path], estimator: str = "catalog") -> list[dict[str, Any]]:
    """One row per task dir: its ξ and D_T terms."""
    from envevo.task import load_task
    from envevo.trace import difficulty as d_t
    from envevo.trace._estimators import estimator as get_estimator, trace_of_task

    p = get_estimator(estimator)
    rows = []
    for path in paths:
        task = load_task(path)
        trace = trace_of_task(task)
        rows.append({"task": task.name, "path": str(path), "task_hash": task.content_hash(),
                     "xi": trace.pretty(), "trace": trace.model_dump(mode="json"), **d_t(trace, p).model_dump()})
    return rows


def run_rows(run: Path, estimator: str = "catalog") -> list[dict[str, Any]]:
    """One row per committed generation of every lineage, D_T recomputed under `estimator`."""
    from envevo.store import LineageStore
    from envevo.trace import difficulty as d_t
    from envevo.trace._estimators import estimator as get_estimator, trace_of_task

    p = get_estimator(estimator)
    rows = []
    with LineageStore.open(run, create=False) as store:
        for lin in store.lineages():
            for v in store.versions(lin.id):
                # The stored ξ is what evolution saw; fall back to the task only for versions stored without it.
                trace = v.trace or trace_of_task(store.load_version_task(v.task_hash))
                rows.append({"lineage": lin.id, "generation": v.generation, "direction": v.direction,
                             "effort": v.effort, "verified": v.verified, "task_hash": v.task_hash,
                             "xi": trace.pretty(), "trace": trace.model_dump(mode="json"), **d_t(trace, p).model_dump()})
    return rows


def _is_run(path: Path) -> bool:
    return (path / "store.sqlite").is_file()


@user_errors
def difficulty(
    target: Path = typer.Argument(..., help="A task dir, a folder of task dirs, or a RUN dir (--out of `envevo evolve`)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object with D_T and its terms per task or generation."),
    estimator: str = typer.Option("catalog", "--estimator", help="p_T estimator: catalog (the procedural engine's priors)."),
) -> None:
    """Model-free difficulty D_T = Σ [−log p_T(σ|g) − log p_T(κ|σ,g)] of tasks, or of every generation of a run."""
    from envevo.cli.verify_cmd import expand_task_args

    if not target.exists():
        raise UserError(f"{target} does not exist; pass a task dir or the --out dir of an `envevo evolve` run")
    if _is_run(target):
        kind, rows = "run", run_rows(target, estimator)
    else:
        kind, rows = "tasks", task_rows(expand_task_args([target]), estimator)
    if json_out:
        print_json({"kind": kind, "target": str(target.resolve()), "estimator": rows[0]["estimator"] if rows else estimator,
                    "rows": rows})
        return
    est = rows[0]["estimator"] if rows else estimator
    table = Table(title=f"D_T of {target} (p_T estimator: {est})")
    cols = (["lineage", "gen", "dir"] if kind == "run" else ["task"]) + ["L", "novelty", "rarity", "D_T", "ξ"]
    for c in cols:
        table.add_column(c, overflow="fold", justify="right" if c in ("gen", "L", "novelty", "rarity", "D_T") else "left")
    for r in rows:
        head = [r["lineage"], str(r["generation"]), r["direction"] or "seed"] if kind == "run" else [r["task"]]
        table.add_row(*map(escape, head), str(r["L"]), f"{r['scenario_novelty']:.2f}", f"{r['skill_rarity']:.2f}",
                      f"{r['D_T']:.2f}", escape(r["xi"]))
    out.print(table)
