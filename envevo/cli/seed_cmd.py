"""`envevo seed`: create seed tasks. `procedural` draws a typical chain from the catalog prior p_T. (Choosing
among existing tasks is `envevo seeds`, in seeds_cmd.)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, out, print_json, sub_app, user_errors

seed_app = sub_app("Create seed tasks to evolve.")


@seed_app.command("procedural")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def procedural(
    out_dir: Annotated[Path, typer.Argument(help="Task dir to write (must not exist unless --force).")],
    goal_category: Annotated[str | None, typer.Option("--goal-category", help="Goal category; `envevo seed "
                                                      "categories` lists them.")] = None,
    length: Annotated[int, typer.Option("--length", help="L, the number of scenario–skill steps.")] = 3,
    seed: o.Seed = 0,
    force: o.Force = False,
    json_out: o.Json = False,
) -> None:
    """Write a procedural Harbor task whose ξ and D_T are known exactly."""
    import asyncio

    from envevo.catalog import CatalogPrior, random_chain
    from envevo.evolve.engines.procedural import ProceduralEngine, write_task
    from envevo.task import load_task
    from envevo.trace import difficulty

    chain = random_chain(goal_category, length, seed)
    path = write_task(chain, out_dir, overwrite=force)
    task = load_task(path)
    trace = asyncio.run(ProceduralEngine().extract_trace(task))
    d = difficulty(trace, CatalogPrior())
    if json_out:
        print_json({"task": str(path.resolve()), "hash": task.content_hash(), "goal": trace.goal,
                    "trace": trace.model_dump(mode="json"), "difficulty": d.model_dump()})
    else:
        out.print(f"[bold]{path}[/]  goal: {trace.goal}")
        out.print(f"ξ: {trace.pretty()}", markup=False, highlight=False)
        out.print(f"L={d.L}  scenario novelty={d.scenario_novelty:.2f}  skill rarity={d.skill_rarity:.2f}  D_T={d.D_T:.2f}")


@seed_app.command("categories")
def categories(json_out: o.Json = False) -> None:
    """List the goal categories a procedural seed can have."""
    from envevo.catalog import goal_categories

    cats = goal_categories()
    if json_out:
        print_json(cats)
    else:
        for c in cats:
            out.print(c)

