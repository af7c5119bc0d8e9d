"""The model a verification command (`verify`, `audit`, `seeds select`) lends its verifiers: the red team's LLM hacker
and, with --model-mutants, the writer of near-miss solutions (`envevo.llm.verifiers_with_model`).

One model for every role the command names: the [llm] table of --config (default ./envevo.toml) with --model,
--base-url and --api-key-env on top, checked before any sandbox starts, metered, and its usage printed at the end
(`evolve` does the same through its engine). Without a configured model the hacker is skipped, with a note.
`--max-tokens` (or [llm] max_tokens / max_cost_usd) caps what the command spends, all tasks together, as evolve's caps a
lineage (`Meter.over_budget`); `budget_stop` is the line the command ends with when the cap stopped its model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo.errors import UserError

if TYPE_CHECKING:
    from envevo.llm import LLMRuntime

USAGE_TITLE = "LLM usage (the red team's hacker and the model's near misses)"


def verification_model(config: Path | None, model: str | None, base_url: str | None, api_key_env: str | None, *,
                       red_team: str, mutation: str, model_mutants: int = 0,
                       max_tokens: int | None = None) -> LLMRuntime | None:
    """The command's model runtime when a verifier asks for one (the red team on, or model mutants), else None.
    Errors a user can fix end here, before any sandbox starts."""
    from envevo.llm import LLMConfigError, LLMRuntime, settings_with_options
    from envevo.verify import parse_mutation, parse_red_team

    if model_mutants and not parse_mutation(mutation)[0]:
        raise UserError(f"--model-mutants {model_mutants} adds to the mutation verifier's near misses: pass "
                        "--mutation on (or sample:N) too")
    if not parse_red_team(red_team)[0] and not model_mutants:
        given = [flag for flag, value in (("--model", model), ("--base-url", base_url), ("--max-tokens", max_tokens))
                 if value is not None]
        if given:
            raise UserError(f"{given[0]} is used here by the red team's LLM hacker (--red-team on) and by "
                            "--model-mutants; neither is asked")
        return None
    runtime = LLMRuntime(settings_with_options(config, model, base_url, api_key_env, max_tokens=max_tokens))
    try:
        runtime.spec("judge")  # the hacker and the mutant writer use the judge's model
    except LLMConfigError as e:
        if model_mutants:
            raise UserError(f"--model-mutants needs a model (--model, or model under [llm] in envevo.toml): {e}") from None
        return runtime  # the hacker says it was skipped, and why
    asyncio.run(runtime.preflight(("judge",)))  # a missing key or a dead endpoint: one line, before any sandbox
    return runtime


def model_usage(runtime: LLMRuntime | None) -> list[dict[str, Any]]:
    """Calls, tokens and cost per role and model of what the command asked its model ([] when it asked nothing)."""
    from envevo.llm import usage_rows

    return usage_rows(runtime.meter.records) if runtime is not None else []


def budget_stop(runtime: LLMRuntime | None) -> str | None:
    """The one line saying the command's cap stopped its model (what was spent, how to raise it), or None."""
    why = runtime.meter.over_budget(None) if runtime is not None else None
    if why is None:
        return None
    return (f"model calls stopped: {why}; the verdicts that still needed the model are inconclusive: raise "
            "--max-tokens (or max_tokens / max_cost_usd under [llm] in envevo.toml) and run again")
