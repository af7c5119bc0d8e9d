"""`--max-cost` is a cap only if every response has a cost: an unpriced model is refused unless `--price` gives one."""

import asyncio

import pytest

from envevo.errors import UserError
from envevo.llm import LLMConfigError, LLMRuntime, parse_role_models, settings_with_options
from envevo.llm._overrides import parse_prices


def runtime(**options):
    return LLMRuntime(settings_with_options(None, **options))


def test_a_cost_cap_with_an_unpriced_model_is_refused_before_any_request():
    rt = runtime(model="qwen3-32b", base_url="http://127.0.0.1:9/v1", max_cost=5.0)
    with pytest.raises(LLMConfigError, match=r"--max-cost needs a price for openai:qwen3-32b.*--price openai:qwen3-32b=IN,OUT"):
        asyncio.run(rt.preflight())  # refused before the (unreachable) endpoint is asked anything


def test_a_price_on_the_command_line_makes_the_cap_real():
    rt = runtime(model="qwen3-32b", base_url="http://127.0.0.1:9/v1", max_cost=5.0, price=["openai:qwen3-32b=0.2,0.6"])
    rt.check_prices()
    price = rt.settings.price(rt.spec("modifier"))
    assert (price.input, price.output) == (0.2, 0.6)


def test_listed_models_and_uncapped_runs_need_no_price(monkeypatch):
    runtime(model="openai:gpt-4.1", max_cost=5.0).check_prices()  # genai-prices knows it
    runtime(model="anthropic:claude-sonnet-4-5", max_cost=5.0).check_prices()
    runtime(model="qwen3-32b", base_url="http://127.0.0.1:9/v1").check_prices()  # no cap: tokens are still metered
    # One unpriced role is enough to refuse.
    roles = parse_role_models(["judge=qwen3-32b"], base_url="http://127.0.0.1:9/v1")
    with pytest.raises(LLMConfigError, match="openai:qwen3-32b"):
        runtime(model="openai:gpt-4.1", max_cost=5.0, role_model=[f"judge={roles['judge']}"],
                base_url="http://127.0.0.1:9/v1").check_prices()


@pytest.mark.parametrize("bad", ["qwen3-32b", "openai:qwen3-32b=1", "openai:qwen3-32b=a,b", "=1,2"])
def test_a_malformed_price_is_one_line(bad):
    with pytest.raises(UserError, match="use PROVIDER:NAME=IN,OUT"):
        parse_prices([bad])
