"""The one retry policy of model HTTP: a time budget per call, retry-after honoured, and a down endpoint that ends
its lineage (resumable), never the run.

The budget tests run on a fake clock that the injected sleep advances, so every wait the policy chooses is taken
in full on that clock; one test waits out a real 60 s overload burst on the fake OpenAI server.
"""

import asyncio
import random
import time

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelHTTPError
from pydantic_ai.exceptions import ModelServerError
from pydantic_ai.models import override_allow_model_requests

from envevo.llm import EndpointUnavailable, EngineStop, LLMRuntime, LLMSettings, RetryPolicy
from envevo.llm._errors import EndpointDown
from tests.fakes import log_forensics as lf
from tests.fakes.models import scripted
from tests.fakes.openai_server import FakeOpenAI, Script, error, final
from tests.llm.test_llm_wire import evolve_once, modifier_script


class Answer(BaseModel):
    ok: bool


def overloaded(retry_after=None):
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return ModelHTTPError.for_category(ModelServerError, status_code=529, model_name="m", headers=headers)


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def ask(model, clock, **settings):
    rt = LLMRuntime(LLMSettings(**settings), models={"judge": model}, sleep=clock.sleep, clock=clock)
    agent = rt.agent("judge", Answer, "answer")
    return asyncio.run(rt.run(agent, "q", role="judge"))


def test_an_overload_burst_shorter_than_the_budget_is_waited_out():
    """Twelve 529s in a row (about 8 minutes of backoff) are within the default 15-minute budget."""
    clock = FakeClock()
    assert ask(scripted(*[overloaded()] * 12, {"ok": True}), clock).ok
    assert len(clock.waits) == 12
    assert 0.75 <= clock.waits[0] <= 1.25 and all(w <= 75 for w in clock.waits)  # backoff capped at 60 s ± 25%
    assert 300 < clock.now < 900


def test_the_budget_ends_the_call_with_a_resumable_stop_that_names_it():
    clock = FakeClock()
    budget = r"kept failing for \d+s from its first failure, its retry budget of 120s \(HTTP 529\).*--resume"
    with pytest.raises(EndpointDown, match=budget) as e:
        ask(scripted(*[overloaded()] * 50), clock, retry_budget_sec=120)
    assert isinstance(e.value, EngineStop) and e.value.status == "budget_exhausted"  # the loop ends the lineage
    assert isinstance(e.value, EndpointUnavailable)  # and before any lineage exists, one line for the user
    assert clock.now == pytest.approx(120, abs=1e-6)  # the last wait was cut to what was left: one last attempt at 120 s


def test_retry_after_is_honoured_and_one_past_the_budget_gives_up_at_once():
    clock = FakeClock()
    assert ask(scripted(overloaded(retry_after=90), {"ok": True}), clock).ok
    assert clock.waits == [90.0]
    clock = FakeClock()
    with pytest.raises(EndpointDown, match="the server asked to wait 1200s"):
        ask(scripted(overloaded(retry_after=1200), {"ok": True}), clock)
    assert clock.waits == []


def test_the_policy_is_the_same_object_for_sync_callers():
    """The llm p_T estimator drives the same Attempts synchronously: same budget, same retry-after rule."""
    now = [0.0]
    attempts = RetryPolicy(budget_sec=10, base_sec=4, max_backoff_sec=4).start(lambda: now[0], random.Random(0))
    waits = []
    while (w := attempts.next_wait()) is not None:
        waits.append(w)
        now[0] += w
    assert sum(waits) == pytest.approx(10) and len(waits) >= 3
    assert "retry budget of 10s" in attempts.why_not


def test_a_lineage_whose_endpoint_stays_down_ends_resumable_and_the_run_returns(tmp_path):
    """A down endpoint mid-lineage is recorded on that lineage; evolve() returns instead of raising."""
    script = Script(**{
        "proposer-extract": [final(lf.extraction())],
        "judge": [final(lf.task_review())],
        "proposer-plan": [error(529, "overloaded")] * 200,
    })
    with FakeOpenAI(script) as server:
        store, status, _ = evolve_once(tmp_path, server, max_retries=None, retry_budget_sec=1.5)
    lineage = store.lineage("log-forensics")
    assert status == "budget_exhausted" == lineage.status
    assert "retry budget of 1.5s (HTTP 529)" in lineage.reason and "--resume" in lineage.reason
    assert store.versions("log-forensics")[-1].generation == 0
    store.close()


def test_a_60_second_overload_burst_is_survived_and_the_run_takes_that_long(tmp_path):
    """The issue's case: 529s for a real 60 s, then answers. The default 15-minute budget, with backoff capped at
    10 s (max_backoff_sec) so the wait ends soon after the burst does."""
    script = Script(**{
        "proposer-extract": [final(lf.extraction()), final(lf.candidate_extraction())],  # the seed, then the candidate
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True))],
        "proposer-plan": [final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": modifier_script(),
    })
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        server.fail_for(529, 60.0)
        t0 = time.monotonic()
        store, status, engine = evolve_once(tmp_path, server, max_retries=None, max_backoff_sec=10.0)
        wall = time.monotonic() - t0
    assert status == "done", store.lineage("log-forensics").reason
    assert store.version("log-forensics", 1).verified
    assert server.burst_errors >= 5  # the first request met the burst and was retried through it
    # whichever role's request met the burst first (the seed gate's judge, since the gate precedes ξ) waited it out
    waited = sum(sum(w) for w in engine.runtime.waits.values())
    assert waited >= 60.0 and wall >= waited
    store.close()


def test_the_preflight_waits_out_an_overloaded_endpoint_under_the_same_policy():
    with FakeOpenAI(Script()) as server:
        server.fail(529, times=2, retry_after=0.2)
        rt = LLMRuntime(LLMSettings(model="openai:fake-model", base_url=server.url))
        asyncio.run(rt.preflight())  # two 529s with retry-after, then the model list
        server.fail(529, times=1, retry_after=5000)
        with pytest.raises(EndpointUnavailable, match="failed the preflight"):
            asyncio.run(rt.preflight())  # a wait past the budget is not taken
