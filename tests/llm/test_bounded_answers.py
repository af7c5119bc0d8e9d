"""Bounded answers (issue 25): an output cap on every role's request, a wall-clock cap on every answer, bounded
judgements of the llm p_T estimator, no `response_format` beside `tools`, and a retry budget counted from the outage.

The wire tests read the request bodies the local fake OpenAI-compatible server received.
"""

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelHTTPError
from pydantic_ai.exceptions import ModelServerError
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from envevo.llm import ROLES, EndpointDown, GuardedModel, LLMPrior, LLMRuntime, LLMSettings, Meter, RoleFailed
from envevo.llm._config import ANSWER_TOKENS, REASONING_TOKENS, ModelSpec
from envevo.llm._guard import AnswerTimedOut, EndpointGates
from envevo.llm._reference_prior import JUDGE_MAX_TOKENS
from tests.fakes.completions_server import FakeCompletions
from tests.fakes.openai_server import FakeOpenAI, Script, delayed, final, text, tool_calls
from tests.fakes.server import Reply
from tests.llm.test_retry import FakeClock


class Answer(BaseModel):
    ok: bool


def wired(server, **kw) -> LLMSettings:
    return LLMSettings(**{"model": "openai:fake-model", "base_url": server.url, "timeout_sec": 5.0, "max_retries": 0, **kw})


def run_role(rt: LLMRuntime, role, *, tool: bool = False):
    agent = rt.agent(role, Answer, f"envevo-role: {role}")
    if tool:
        @agent.tool_plain
        def run(command: str) -> str:
            """Run a command."""
            return "exit 0"
    return asyncio.run(rt.run(agent, "q", role=role))


# ----------------------------------------------------------------------------------------------- output cap


def test_every_role_request_carries_its_default_output_cap_on_the_wire():
    script = Script(**{r: [final({"ok": True})] for r in ROLES})
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        rt = LLMRuntime(wired(server))
        for role in ROLES:
            assert run_role(rt, role).ok
    caps = {r: ANSWER_TOKENS[r] + REASONING_TOKENS for r in ROLES}
    # As `max_tokens`: servers like llama-cpp-python ignore OpenAI's newer `max_completion_tokens`.
    assert {server.roles()[i]: body["max_tokens"] for i, body in enumerate(server.requests)} == caps
    assert all("max_completion_tokens" not in body for body in server.requests)


def test_a_set_cap_and_a_larger_thinking_budget_win_over_the_default():
    settings = LLMSettings.model_validate({"model": "openai:gpt-4.1", "roles": {
        "judge": {"max_output_tokens": 900},
        "proposer": {"anthropic_thinking": {"type": "enabled", "budget_tokens": 40000}},
        "reviewer": {"thinking": "xhigh"}}})
    rt = LLMRuntime(settings)
    assert rt.model_settings("judge")["max_tokens"] == 900
    assert rt.model_settings("proposer")["max_tokens"] == 40000 + ANSWER_TOKENS["proposer"]  # Anthropic: cap > budget
    assert rt.model_settings("reviewer")["max_tokens"] == 32768 + ANSWER_TOKENS["reviewer"]
    assert rt.model_settings("modifier")["max_tokens"] == ANSWER_TOKENS["modifier"] + REASONING_TOKENS


# ----------------------------------------------------------------------------------------------- wall-clock cap


def test_an_answer_slower_than_answer_timeout_sec_ends_with_a_reason_naming_the_setting():
    """Streamed on the wire; the HTTP timeout (silence) is longer, so only the answer's cap can end it."""
    script = Script(judge=[delayed(final({"ok": True}), 3.0)])
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        rt = LLMRuntime(wired(server, answer_timeout_sec=0.5))
        t0 = time.monotonic()
        with pytest.raises(RoleFailed, match=r"judge: .*did not finish one answer within 0.5s: raise answer_timeout_sec"):
            run_role(rt, "judge")
        assert time.monotonic() - t0 < 2.5
    assert len(server.requests) == 1 and server.requests[0]["stream"] is True  # not retried


def test_a_stream_that_never_stops_is_cut_by_the_answer_cap():
    """A model that keeps streaming chunks (never silent, so no read timeout) is ended by answer_timeout_sec."""
    chunks = 0

    async def endless(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        nonlocal chunks
        yield {0: DeltaToolCall(name=info.output_tools[0].name, json_args='{"ok": ')}
        while True:
            chunks += 1
            yield {0: DeltaToolCall(json_args=" ")}
            await asyncio.sleep(0.01)

    model = GuardedModel(FunctionModel(stream_function=endless), ModelSpec(provider="openai", name="m"), Meter(),
                         EndpointGates(2), stream=True, answer_timeout_sec=0.3)
    from pydantic_ai import Agent

    with pytest.raises(AnswerTimedOut, match="within 0.3s"):
        asyncio.run(Agent(model, output_type=Answer).run("q"))
    assert 5 < chunks < 200


def test_an_abandoned_answer_is_metered_and_counts_against_the_lineage_budget(tmp_path: Path):
    """Its tokens were spent: a stream cut mid-answer is metered from what arrived (here the model's running usage),
    a request cut before anything arrived is estimated from the prompt and flagged; both reach the lineage's cap and
    the store (issue 25)."""
    from pydantic_ai import Agent

    from envevo.llm import BudgetExceeded, attach_store
    from envevo.store import LineageStore
    from envevo.task import load_task
    from tests.fakes import log_forensics as lf

    async def endless(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name=info.output_tools[0].name, json_args='{"ok": ')}
        while True:
            yield {0: DeltaToolCall(json_args=" ")}
            await asyncio.sleep(0.01)

    async def silent(messages: list[ModelMessage], info: AgentInfo):
        await asyncio.sleep(5)

    store = LineageStore.open(tmp_path / "run")
    lid = store.create_lineage("log-forensics", load_task(lf.SEED))
    meter = Meter(max_tokens=150)  # under it after the first answer, over it after the second
    attach_store(meter, store)
    spec = ModelSpec(provider="openai", name="m")
    for model, stream in ((FunctionModel(stream_function=endless), True), (FunctionModel(silent), False)):
        guarded = GuardedModel(model, spec, meter, EndpointGates(2), stream=stream, answer_timeout_sec=0.2)
        with meter.scope("judge", lid, 1), pytest.raises(AnswerTimedOut):
            asyncio.run(Agent(guarded, output_type=Answer, instructions="x" * 400).run("q"))
    streamed, cut = meter.records
    assert streamed.output_tokens > 0 and not streamed.estimated and streamed.lineage == lid
    assert cut.estimated and cut.input_tokens >= 100 and cut.output_tokens == 0  # 400 characters of instructions
    assert meter.spent(lid).tokens == sum(r.input_tokens + r.output_tokens for r in meter.records)
    with meter.scope("judge", lid, 1), pytest.raises(BudgetExceeded):
        meter.check()
    (total,) = store.usage_totals(lid)
    assert (total.calls, total.estimated_calls) == (2, 1)
    assert [u.estimated for u in store.usage(lid)] == [False, True]
    store.close()


# ----------------------------------------------------------------------------------------------- the estimator


def test_the_estimators_judgement_is_capped_and_asks_for_a_json_schema(tmp_path: Path):
    with FakeCompletions(echo=False, judgement='{"p": 0.25}') as server:
        p = LLMPrior(model="toy", base_url=server.url, method="judgement", cache=tmp_path / "c.json")
        assert p.neg_log_p_scenario("a csv file", "count lines") == pytest.approx(1.386, abs=1e-3)
        [(path, body)] = server.requests
    assert path.endswith("/chat/completions")
    assert body["max_tokens"] == JUDGE_MAX_TOKENS <= 64
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema" and schema["required"] == ["p"]


class NoSchemaServer(FakeCompletions):
    """A chat server that refuses JSON-schema response formats (400), as some do."""

    def post(self, path: str, request: dict) -> Reply:
        if "response_format" in request:
            return self.error(400, "response_format is not supported")
        return super().post(path, request)


def test_a_server_without_json_schema_output_is_asked_again_without_it_and_not_again(tmp_path: Path):
    with NoSchemaServer(echo=False, judgement='{"p": 0.5}') as server:
        p = LLMPrior(model="toy", base_url=server.url, method="judgement", cache=tmp_path / "c.json")
        p.neg_log_p_scenario("a csv file", "count lines")
        p.neg_log_p_skill("grep", "a csv file", "count lines")
        bodies = [b for _, b in server.requests]
    assert ["response_format" in b for b in bodies] == [True, False, False]
    assert all(b["max_tokens"] == JUDGE_MAX_TOKENS for b in bodies)


# ----------------------------------------------------------------------------------------------- native output with tools


@pytest.mark.parametrize("where", ["run", "role"])
def test_a_tool_using_role_never_sends_response_format_beside_tools(where):
    """The hacker follows the judge's mode; the Modifier the run's. Native there sent `tools` and `response_format`
    together, and llama.cpp then forced the schema: no tool was ever called."""
    kw = {"output_mode": "native"} if where == "run" else {"roles": {"judge": {"output_mode": "native"}}}
    script = Script(judge=[tool_calls(("run", {"command": "ls"})), final({"ok": True}),  # the tool user
                           text('{"ok": true}')])  # a role without tools keeps its native mode
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        rt = LLMRuntime(wired(server, **kw))
        assert run_role(rt, "judge", tool=True).ok
        assert run_role(rt, "judge").ok
    with_tools, answer, plain = server.requests
    for body in (with_tools, answer):
        assert "tools" in body and "response_format" not in body
        assert {t["function"]["name"] for t in body["tools"]} == {"run", "final_result"}
    assert plain["response_format"]["type"] == "json_schema" and "tools" not in plain


@pytest.mark.parametrize("owner", ["llamacpp", "vllm", "sglang", "openai", None])
def test_auto_asks_json_schema_where_the_server_enforces_it_and_tool_calls_elsewhere(owner, tmp_path):
    """output_mode "auto" (the default): measured on Gemma 3 270M under llama.cpp, a structured role's answers were
    schema-valid 4/5 with a JSON-schema response_format and 0/5 as tool calls (benchmarks/llm_schema_valid.py). The
    preflight's model list says who serves the endpoint; a recording keeps that, so its replay asks the same way."""
    grammar = owner in ("llamacpp", "vllm", "sglang")
    answer = text('{"ok": true}') if grammar else final({"ok": True})
    script = Script(judge=[answer, tool_calls(("run", {"command": "ls"})), final({"ok": True})])
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        server.owned_by = owner
        rt = LLMRuntime(wired(server, record_dir=tmp_path / "rec"))
        asyncio.run(rt.preflight(("judge",)))
        assert run_role(rt, "judge").ok
        assert run_role(rt, "judge", tool=True).ok  # a tool user answers through a tool whatever the server
    structured, with_tools, _ = server.requests
    assert ("response_format" in structured, "tools" in structured) == (grammar, not grammar)
    assert "tools" in with_tools and "response_format" not in with_tools
    replay = LLMRuntime(LLMSettings(model="openai:fake-model", replay_dir=tmp_path / "rec"))
    assert replay.grammar_roles == ({"judge"} if grammar else set())
    with override_allow_model_requests(True):
        assert run_role(replay, "judge").ok  # the recorded answer parses as it was asked


# ----------------------------------------------------------------------------------------------- the retry budget


def overloaded():
    return ModelHTTPError.for_category(ModelServerError, status_code=529, model_name="m", headers={})


def test_the_retry_budget_counts_from_the_first_failure_not_from_a_long_answer_before_it():
    """A server killed 50 s into a streamed answer: the 60 s budget is for retrying, all of it."""
    clock = FakeClock()
    calls = 0

    def answer(messages, info):
        nonlocal calls
        calls += 1
        if calls == 1:
            clock.now += 50.0  # 50 s of streaming, then the connection drops
        raise overloaded()

    rt = LLMRuntime(LLMSettings(retry_budget_sec=60), models={"judge": FunctionModel(answer)}, sleep=clock.sleep,
                    clock=clock)
    with pytest.raises(EndpointDown, match=r"kept failing for 60s from its first failure, its retry budget of 60s"):
        asyncio.run(rt.run(rt.agent("judge", Answer, "answer"), "q", role="judge"))
    assert sum(clock.waits) == pytest.approx(60.0)
    assert clock.now == pytest.approx(110.0)
