"""`envevo review`: a human verdict on an evolved version, recorded in the run (`envevo rubric learn` turns the
rejections into rubric criteria)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, out, print_json, user_errors
from envevo.errors import UserError


@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def review(
    run: o.RunArg,
    version: Annotated[str, typer.Argument(help="LINEAGE@GENERATION (e.g. csv-etl@3), LINEAGE__gNN, or a task hash "
                                           "prefix.")],
    accept: Annotated[bool, typer.Option("--accept", help="The version is fine.")] = False,
    reject: Annotated[str | None, typer.Option("--reject", help="What is wrong with the version (becomes rubric "
                                               "material).")] = None,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help="Who reviewed it.")] = None,
    json_out: o.Json = False,
) -> None:
    """Record a human verdict on a version; `envevo rubric learn` turns rejections into rubric criteria."""
    from envevo.llm import record_review
    from envevo.store import LineageStore

    if accept == (reject is not None):
        raise UserError('give exactly one of --accept or --reject "what is wrong"')
    with LineageStore.open(run, create=False) as store:
        r = record_review(store, version, accept=accept, issue=reject, reviewer=reviewer)
    if json_out:
        print_json(r.model_dump(mode="json"))
    else:
        out.print(f"{r.verdict}ed {r.lineage}@{r.generation}" + (f": {escape(r.issue)}" if r.issue else ""), highlight=False)

