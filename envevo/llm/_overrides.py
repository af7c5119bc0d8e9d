"""The LLM settings of one command: the `[llm]` table of envevo.toml, with the command line's values on top."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envevo.errors import UserError
from envevo.llm._config import LLMSettings, Price, load_settings
from envevo.llm._model_grammar import normalize_model


def parse_role_models(items: Sequence[str], *, base_url: str | None = None) -> dict[str, str]:
    """`--role-model ROLE=PROVIDER:NAME` values as role -> model, each in the one model grammar."""
    roles: dict[str, str] = {}
    for item in items:
        role, sep, spec = item.partition("=")
        if not sep or not spec.strip():
            raise UserError(f"--role-model {item!r}: use ROLE=provider:name, e.g. judge=openai:gpt-4.1-mini")
        roles[role.strip()] = normalize_model(spec, base_url=base_url)
    return roles


def parse_prices(items: Sequence[str], *, base_url: str | None = None) -> dict[str, Price]:
    """`--price PROVIDER:NAME=IN,OUT` values (USD per million input and output tokens) as model -> Price."""
    prices: dict[str, Price] = {}
    for item in items:
        model, sep, pair = item.rpartition("=")
        try:
            inp, out = (float(x) for x in pair.split(","))
            if not sep or not model.strip():
                raise ValueError
            prices[normalize_model(model, base_url=base_url)] = Price(input=inp, output=out)
        except ValueError:
            raise UserError(f"--price {item!r}: use PROVIDER:NAME=IN,OUT in USD per million tokens, "
                            "e.g. openai:qwen3-32b=0.2,0.6 (0,0 for a free local server)") from None
    return prices


def settings_with_options(config: Path | None = None, model: str | None = None, base_url: str | None = None,
                          api_key_env: str | None = None, role_model: Sequence[str] = (),
                          max_cost: float | None = None, max_tokens: int | None = None, price: Sequence[str] = (),
                          record: Path | None = None, replay: Path | None = None) -> LLMSettings:
    """`config` (default ./envevo.toml if present) with the given command-line values over the file's."""
    settings = load_settings(config)
    return settings.with_overrides(
        model=normalize_model(model, base_url=base_url or settings.base_url) if model is not None else None,
        base_url=base_url, api_key_env=api_key_env,
        role_models=parse_role_models(role_model, base_url=base_url or settings.base_url),
        max_cost_usd=max_cost, max_tokens=max_tokens,
        prices=parse_prices(price, base_url=base_url or settings.base_url), record_dir=record, replay_dir=replay)
