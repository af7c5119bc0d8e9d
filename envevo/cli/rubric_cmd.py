"""`envevo rubric learn`: rubric criteria learned from the issues that human reviews record (the judge of every
later run reads the project's rubric file)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, err, out, print_json, renamed, sub_app, user_errors
from envevo.errors import UserError

PROJECT_RUBRIC = Path("envevo-rubric.toml")  # the judge of every run reads it when it exists (docs/llm.md)

rubric_app = sub_app("Grow the LLM judge's rubric from human review.")


@rubric_app.command("learn")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def learn(
    run: Annotated[Path, typer.Argument(help="Run dir with human reviews (`envevo review`).")],
    rubric: Annotated[Path, typer.Option("--rubric", metavar=o.RUBRIC_METAVAR, help="The project's rubric TOML, "
                                         "which every later run's judge reads: confirmed criteria are appended to "
                                         "it.")] = PROJECT_RUBRIC,
    old_rubric_file: Annotated[Path | None, o.old_spelling("--rubric-file", "--rubric")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Append every proposed criterion without asking.")] = False,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    config: o.ConfigFile = None,
    old_llm_config: Annotated[Path | None, o.old_spelling("--llm-config", "--config")] = None,
    json_out: o.Json = False,
) -> None:
    """Turn the issues of rejected versions into proposed rubric criteria, show them, append the confirmed ones.

    --model names the model that proposes criteria. --json prints the proposals (appending only with --yes)."""
    from envevo.evolve.engines.llm import task_rubric
    from envevo.llm import LLMRuntime, append_criteria, learn_criteria, reviews, settings_with_options

    rubric_file = renamed(old_rubric_file, rubric, "rubric learn --rubric-file", "--rubric", unset=PROJECT_RUBRIC)
    recorded = reviews(run)
    if not any(r.verdict == "reject" for r in recorded):
        raise UserError(f"{run} has no rejected versions to learn from; record some with `envevo review RUN VERSION --reject ...`")
    config = renamed(old_llm_config, config, "--llm-config", "--config")
    settings = settings_with_options(config, model, base_url, api_key_env)
    runtime = LLMRuntime(settings)
    current = task_rubric(settings, [rubric_file] if rubric_file.is_file() else [])

    async def main():
        await runtime.preflight(("judge",))
        return await learn_criteria(runtime, recorded, current)

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
