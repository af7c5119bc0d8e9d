"""envevo's LLM roles against an Anthropic endpoint, over the wire: a local fake Messages API, the real
`anthropic` SDK client built by `envevo.llm._providers`, pydantic-ai's AnthropicModel, envevo's GuardedModel.

No containers. Covers: a role call (the rubric judge, and the proposer's ξ extraction) returns the parsed
structured output from a `tool_use` block; its usage is metered for that role; a 429 with retry-after is
retried after the wait the server asked for. Model names with a large default `max_tokens` (the real Claude
names) make pydantic-ai stream behind the scenes because envevo sets a client timeout, so both the plain JSON
and the server-sent-events paths are exercised.
"""

import asyncio

import pytest
from pydantic_ai.models import override_allow_model_requests

from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import LLMSettings
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.anthropic_server import INPUT_TOKENS, OUTPUT_TOKENS, FakeAnthropic, Script, error, final

# fake-model: unknown to pydantic-ai, default max_tokens 16384, a plain JSON response.
# claude-haiku-4-5: max output 64000, so with envevo's client timeout pydantic-ai streams (SSE).
MODELS = [pytest.param("fake-model", False, id="json"), pytest.param("claude-haiku-4-5", True, id="sse")]


@pytest.fixture(autouse=True)
def _fake_anthropic_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key")


def settings(server, name, **kw):
    base = dict(model=f"anthropic:{name}", base_url=server.url, timeout_sec=5.0, max_retries=3, max_backoff_sec=0.2)
    return LLMSettings(**{**base, **kw})


@pytest.mark.parametrize(("name", "streamed"), MODELS)
def test_the_rubric_judge_runs_on_anthropic_and_its_usage_is_metered(name, streamed):
    script = Script(judge=[final(lf.task_review(fail="anti_cheating_measures"))])
    with FakeAnthropic(script, models=(name,)) as server, override_allow_model_requests(True):
        engine, _ = build_llm_engine(settings(server, name, stream=streamed), container_shell=False)
        assert engine.runtime.spec("judge").provider == "anthropic"
        asyncio.run(engine.preflight())  # GET /v1/models: key present, endpoint up, model served
        report = asyncio.run(engine.judge().check(load_task(lf.SEED), lf.SEED))
    assert script.remaining() == {}

    # The structured answer came back parsed: the one failing critical criterion, with its reason, rejects the task.
    assert report.name == "rubric" and not report.passed
    assert report.reasons[0] == "anti_cheating_measures (critical): checked anti cheating measures against the files"

    # The request was an Anthropic Messages call from the real SDK, answered through the output tool.
    [request] = server.requests
    assert server.paths[0].split("?")[0] == "/v1/messages"
    # The key from ANTHROPIC_API_KEY (anthropic SDK 2.x sends it as a bearer token; older ones as x-api-key).
    sent = server.headers[0]
    assert "sk-ant-fake-key" in (sent.get("x-api-key", ""), sent.get("authorization", "").removeprefix("Bearer "))
    assert "anthropic-version" in sent
    assert request["model"] == name and bool(request.get("stream")) is streamed
    assert "envevo-role: judge" in str(request["system"])
    assert "final_result" in [t["name"] for t in request["tools"]]
    assert request["messages"][0]["role"] == "user"

    # Usage, metered for the judge role, exactly what the server reported.
    [rec] = engine.runtime.meter.records
    assert (rec.role, rec.model) == ("judge", f"anthropic:{name}")
    assert (rec.input_tokens, rec.output_tokens) == (INPUT_TOKENS, OUTPUT_TOKENS)
    totals = engine.runtime.meter.totals()
    assert set(totals) == {"judge"} and totals["judge"]["calls"] == 1
    if name.startswith("claude-"):  # genai-prices knows real Claude models: the call is costed too
        assert rec.cost_usd is not None and rec.cost_usd > 0


@pytest.mark.parametrize(("name", "streamed"), MODELS)
def test_a_429_with_retry_after_is_retried_then_the_proposer_gets_its_trace(name, streamed):
    rate_limited = error(429, "Number of request tokens has exceeded your per-minute rate limit", {"retry-after": "1"})
    script = Script(**{"proposer-extract": [rate_limited, final(lf.extraction())]})
    with FakeAnthropic(script, models=(name,)) as server, override_allow_model_requests(True):
        engine, _ = build_llm_engine(settings(server, name, stream=streamed), container_shell=False)
        trace = asyncio.run(engine.extract_trace(load_task(lf.SEED)))
    assert script.remaining() == {}
    assert len(server.requests) == 2 and server.requests[0] == server.requests[1]  # the same request, resent

    # Retried once, after exactly the wait the server asked for (the SDK's own retries are off).
    assert engine.runtime.waits["proposer"] == [1.0]
    assert trace.L == 3 and [s.scenario for s in trace.steps] == [s for s, _ in lf.STEPS]

    # The 429 cost nothing; the answer is metered once, for the proposer.
    [rec] = engine.runtime.meter.records
    assert rec.role == "proposer" and (rec.input_tokens, rec.output_tokens) == (INPUT_TOKENS, OUTPUT_TOKENS)
