"""Guarded model requests: retries that respect retry-after, bounded concurrency, usage and budgets."""

import asyncio

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelHTTPError, ModelResponse, ModelTimeoutError, ToolCallPart
from pydantic_ai.exceptions import ModelAuthenticationError, ModelRateLimitError, ModelServerError
from pydantic_ai.models.function import FunctionModel

from envevo.llm import BudgetExceeded, EndpointUnavailable, LLMRuntime, LLMSettings, Price, attach_store
from envevo.store import LineageStore
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.models import scripted


class Answer(BaseModel):
    ok: bool


def http(category, status, headers=None):
    return ModelHTTPError.for_category(category, status_code=status, model_name="m", headers=headers or {})


def make(model, **settings):
    waits = []

    async def sleep(s):
        waits.append(s)

    rt = LLMRuntime(LLMSettings(**settings), models={"judge": model}, sleep=sleep)
    return rt, waits


def ask(rt, lineage=None):
    agent = rt.agent("judge", Answer, "answer")
    return asyncio.run(rt.run(agent, "q", role="judge", lineage=lineage, generation=1 if lineage else None))


def test_429_waits_as_long_as_retry_after_says_then_succeeds():
    rt, waits = make(scripted(http(ModelRateLimitError, 429, {"retry-after": "7"}), {"ok": True}))
    assert ask(rt).ok
    assert waits == [7.0]


def test_server_errors_and_timeouts_back_off_exponentially():
    model = scripted(http(ModelServerError, 503), ModelTimeoutError("m", "read timed out", phase="read"),
                     http(ModelServerError, 502), {"ok": True})
    rt, waits = make(model, max_backoff_sec=3)
    assert ask(rt).ok
    assert len(waits) == 3
    assert 0.75 <= waits[0] <= 1.25 and 1.5 <= waits[1] <= 2.5 and 2.25 <= waits[2] <= 3.75  # capped at 3 ± jitter


def test_an_endpoint_that_keeps_failing_stops_with_a_resumable_message():
    rt, waits = make(scripted(*[http(ModelServerError, 500)] * 3), max_retries=2)
    with pytest.raises(EndpointUnavailable, match=r"kept failing after 2 retries \(HTTP 500\).*--resume"):
        ask(rt)
    assert len(waits) == 2


def test_a_rejected_key_is_not_retried():
    rt, waits = make(scripted(http(ModelAuthenticationError, 401)))
    with pytest.raises(EndpointUnavailable, match="rejected the API key"):
        ask(rt)
    assert waits == []


def test_concurrency_is_bounded_per_endpoint():
    state = {"now": 0, "peak": 0}

    async def slow(messages, info):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.05)
        state["now"] -= 1
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"ok": True})])

    rt = LLMRuntime(LLMSettings(max_concurrency=2), models={"judge": FunctionModel(slow)})

    async def many():
        agent = rt.agent("judge", Answer, "answer")
        await asyncio.gather(*(rt.run(agent, "q", role="judge") for _ in range(6)))

    asyncio.run(many())
    assert state["peak"] == 2


def test_usage_is_recorded_per_role_with_configured_prices():
    model = scripted({"ok": True}, name="priced")
    rt = LLMRuntime(LLMSettings(prices={"priced": Price(input=1.0, output=10.0)}), models={"judge": model})
    seen = []
    rt.meter.on_usage = seen.append
    ask(rt, lineage="lin")
    (rec,) = seen
    assert (rec.role, rec.lineage, rec.generation, rec.model) == ("judge", "lin", 1, "openai:priced")
    assert rec.cost_usd == pytest.approx((rec.input_tokens * 1.0 + rec.output_tokens * 10.0) / 1e6)


def test_a_lineage_over_its_token_cap_gets_no_more_calls():
    model = scripted({"ok": True}, {"ok": True})
    rt = LLMRuntime(LLMSettings(max_tokens=10), models={"judge": model})
    ask(rt, lineage="lin")  # the first call is allowed and crosses the cap
    with pytest.raises(BudgetExceeded, match=r"lineage lin used \d+ tokens, reaching its cap of 10 \(--max-tokens\)") as e:
        ask(rt, lineage="lin")
    assert e.value.status == "budget_exhausted" and e.value.lineage == "lin"
    assert len(model.queue) == 1  # the second request never reached the model
    ask(rt, lineage=None)  # the calls outside lineages (seed extraction) are a budget of their own


def test_cost_cap_and_store_accounting_survive_a_restart(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    lid = store.create_lineage("log-forensics", load_task(lf.SEED))
    price = {"prices": {"m": Price(input=1000.0, output=1000.0)}, "max_cost_usd": 0.01}
    rt = LLMRuntime(LLMSettings(**price), models={"judge": scripted({"ok": True}, name="m")})
    attach_store(rt.meter, store)
    ask(rt, lineage=lid)
    (total,) = store.usage_totals(lid)
    assert (total.role, total.calls) == ("judge", 1) and total.cost_usd > 0.01
    # A new process (resume) starts from what the store recorded: the lineage is already over budget.
    rt2 = LLMRuntime(LLMSettings(**price), models={"judge": scripted({"ok": True}, name="m")})
    attach_store(rt2.meter, store)
    with pytest.raises(BudgetExceeded, match="--max-cost"):
        ask(rt2, lineage=lid)
    store.close()
