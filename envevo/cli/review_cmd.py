"""`envevo review` and `envevo rubric learn`: human verdicts on evolved versions, and rubric criteria learned from
the issues they record (the judge of every later run reads the project's rubric file)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, err, out, print_json, sub_app, user_errors
from envevo.errors import UserError

rubric_app = sub_app("Grow the LLM judge's rubric from human review.")


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


@rubric_app.command("learn")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def learn(
    run: Annotated[Path, typer.Argument(help="Run dir with human reviews (`envevo review`).")],
    rubric_file: Annotated[Path, typer.Option("--rubric-file", help="The project's rubric file: confirmed criteria are "
                                              "appended to it.")] = Path("envevo-rubric.toml"),
    yes: Annotated[bool, typer.Option("--yes", help="Append every proposed criterion without asking.")] = False,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    llm_config: o.LLMConfigFile = None,
    json_out: o.Json = False,
) -> None:
    """Turn the issues of rejected versions into proposed rubric criteria, show them, append the confirmed ones.

    --model names the model that proposes criteria. --json prints the proposals (appending only with --yes)."""
    from envevo.evolve.engines.llm import task_rubric
    from envevo.llm import LLMRuntime, append_criteria, learn_criteria, reviews, settings_with_options

    recorded = reviews(run)
    if not any(r.verdict == "reject" for r in recorded):
        raise UserError(f"{run} has no rejected versions to learn from; record some with `envevo review RUN VERSION --reject ...`")
    settings = settings_with_options(llm_config, model, base_url, api_key_env)
    runtime = LLMRuntime(settings)
    rubric = task_rubric(settings, [rubric_file] if rubric_file.is_file() else [])

    async def main():
        await runtime.preflight(("judge",))
        return await learn_criteria(runtime, recorded, rubric)

    proposed = asyncio.run(main())
    if json_out:
        chosen = proposed if yes else []
    else:
        if not proposed:
            err.print("no new criteria: the rubric already covers the recorded issues")
        chosen = []
        for c in proposed:
            out.print(f"[bold]{c.name}[/] (weight {c.weight:g}, issues {', '.join(map(str, c.issues)) or '-'})\n  {escape(c.description)}")
            if yes or typer.confirm(f"append {c.name} to {rubric_file}?", default=True):
                chosen.append(c)
    if chosen:
        append_criteria(rubric_file, [c.criterion() for c in chosen])
    if json_out:
        print_json({"proposed": [c.model_dump(mode="json") for c in proposed], "appended": [c.name for c in chosen],
                    "rubric_file": str(rubric_file)})
    elif chosen:
        out.print(f"appended {len(chosen)} criteria to {rubric_file}; later runs' judges read it")
