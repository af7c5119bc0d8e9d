"""Reasons that say what to fix (issue 25, defect 6): a role's failure is told in envevo's settings, with its cause.

pydantic-ai says "Increase the `max_tokens` model setting" (envevo's is `max_output_tokens` under
[llm.roles.<role>]; `[llm] max_tokens` is the lineage budget), "incomplete JSON" when no JSON was produced, and
"Exceeded maximum output retries (N)" without what was wrong.
"""

import asyncio
import random

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from envevo.evolve import EvolveConfig, GenerationContext, evolve
from envevo.evolve.engines.llm import LLMEngine
from envevo.evolve.engines.llm._text_actions import run_text_modifier
from envevo.evolve.engines.llm._workspace import Workspace
from envevo.llm import CandidateFailed, LLMRuntime, LLMSettings, RoleFailed
from envevo.store import LineageStore
from envevo.task import load_task, save
from envevo.trace import Direction, Step, Trace
from tests.fakes import log_forensics as lf
from tests.fakes.models import scripted
from tests.fakes.openai_server import FakeOpenAI, Script, error


def lf_trace() -> Trace:
    return Trace(goal=lf.GOAL, final=lf.FINAL, steps=tuple(Step(scenario=s, skill=k) for s, k in lf.STEPS))


class Answer(BaseModel):
    ok: bool
    n: int


def fails(reply, *, role="judge", **settings) -> str:
    def answer(messages, info: AgentInfo) -> ModelResponse:
        return reply(info)

    rt = LLMRuntime(LLMSettings(**settings), models={role: FunctionModel(answer)})
    with pytest.raises(RoleFailed) as e:
        asyncio.run(rt.run(rt.agent(role, Answer, "answer"), "q", role=role))
    return str(e.value)


def test_an_answer_cut_before_any_json_is_not_called_incomplete_json():
    reason = fails(lambda i: ModelResponse(parts=[TextPart("Let me think step by step about the task")],
                                           finish_reason="length"), output_mode="native")
    assert "incomplete JSON" not in reason and "max_tokens" not in reason
    assert reason == ("judge: the answer was cut before any JSON began (the output cap of 24576 tokens, or the server's "
                      "context for prompt + answer); raise max_output_tokens under [llm.roles.judge], or serve a longer "
                      "context")


def test_cut_json_names_envevos_setting_not_pydantic_ais():
    reason = fails(lambda i: ModelResponse(parts=[TextPart('{"ok": tr')], finish_reason="length"),
                   role="proposer", output_mode="native", roles={"proposer": {"max_output_tokens": 300}})
    assert "Increase the `max_tokens` model setting" not in reason
    # the real model's case: 11,347 prompt + 5,037 answer tokens filled a 16k slot, far under the 24k cap
    assert reason == ("proposer: the answer was cut inside its JSON (the output cap of 300 tokens, or the server's "
                      "context for prompt + answer); raise max_output_tokens under [llm.roles.proposer], or serve a "
                      "longer context")


def test_a_tool_call_cut_by_the_cap_names_envevos_setting():
    reason = fails(lambda i: ModelResponse(parts=[ToolCallPart(i.output_tools[0].name, '{"ok": tr')],
                                           finish_reason="length"), role="reviewer")
    assert "cut inside its tool call's arguments" in reason and "raise max_output_tokens under [llm.roles.reviewer]" in reason
    assert "`max_tokens`" not in reason


def test_exceeded_output_retries_carries_the_last_validation_error():
    reason = fails(lambda i: ModelResponse(parts=[ToolCallPart(i.output_tools[0].name, {"ok": True})]),
                   output_retries=1)
    assert reason == "judge: Exceeded maximum output retries (1); the last answer was rejected: n: Field required"
    reason = fails(lambda i: ModelResponse(parts=[TextPart('{"ok": true, "n": "many"}')]), output_mode="native",
                   output_retries=0)
    assert reason.startswith("judge: Exceeded maximum output retries (0); the last answer was rejected: n: Input should be")


def test_a_request_over_the_servers_context_window_names_the_cap_to_lower():
    message = ("This model's maximum context length is 32768 tokens. However, your request has 10000 input tokens "
               "plus 24576 'max_tokens'. Please reduce one or the other.")
    with FakeOpenAI(Script(judge=[error(400, message)])) as server, override_allow_model_requests(True):
        rt = LLMRuntime(LLMSettings(model="openai:fake-model", base_url=server.url, max_retries=0))
        with pytest.raises(RoleFailed, match=r"\(lower max_output_tokens under \[llm.roles.judge\], or serve a longer context\)"):
            asyncio.run(rt.run(rt.agent("judge", Answer, "envevo-role: judge"), "q", role="judge"))


# ---- what the loop stores, and the text-action Modifier ------------------------------------------------------
def _runtime(**models):
    given = {r: models.get(r) or scripted(name=f"idle-{r}") for r in ("proposer", "reviewer", "modifier", "judge")}
    return LLMRuntime(LLMSettings(roles={"proposer": {"max_output_tokens": 2048}, "modifier": {"max_output_tokens": 3000}},
                                  modifier_requests=2), models=given)


def test_a_proposer_answer_cut_at_its_cap_is_stored_as_cut_not_as_a_plan_that_changes_nothing(tmp_path):
    def cut(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, '{"rationale": "a new step, because')],
                             finish_reason="length")

    store = LineageStore.open(tmp_path / "run")
    seed = load_task(lf.SEED)
    lid = store.create_lineage("log-forensics", seed, trace=lf_trace())
    cfg = EvolveConfig(engine="llm", generations=1, plan_budget=1, directions=[Direction.SKILL])
    statuses = asyncio.run(evolve(store, [lid], LLMEngine(_runtime(proposer=FunctionModel(cut))), cfg, verifiers=[]))
    assert statuses[lid] == "terminated"
    (plan,) = store.plans(lid, 1)
    assert "changed nothing" not in plan.feedback and "does not change ξ" not in plan.feedback
    assert "the answer was cut inside its tool call's arguments (the output cap of 2048 tokens" in plan.feedback
    assert "raise max_output_tokens under [llm.roles.proposer]" in plan.feedback


def _text_modifier(tmp_path, reply) -> tuple[str, list]:
    seen = []

    def answer(messages, info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return reply()

    draft = save(load_task(lf.SEED), tmp_path / "draft")
    ctx = GenerationContext(lineage="log-forensics", generation=1, rng=random.Random(0), workdir=tmp_path)
    with pytest.raises(CandidateFailed) as e:
        asyncio.run(run_text_modifier(_runtime(modifier=FunctionModel(answer)), Workspace(draft), "edit it", ctx, None))
    return str(e.value), seen


def test_a_text_modifier_request_over_the_context_window_names_the_cap_to_lower(tmp_path):
    message = "This model's maximum context length is 32768 tokens. However, you requested 35000 tokens."

    def refused():
        raise ModelHTTPError(400, "fake-model", body={"message": message})

    reason, _ = _text_modifier(tmp_path, refused)
    assert reason.startswith("the Modifier did not finish: status_code: 400") and "modifier: " not in reason
    assert reason.endswith("(lower max_output_tokens under [llm.roles.modifier], or serve a longer context)")


def test_text_modifier_replies_cut_at_the_cap_are_said_to_be_cut(tmp_path):
    reason, seen = _text_modifier(tmp_path, lambda: ModelResponse(
        parts=[TextPart("The new step goes in first.\n\n```write instruction.md\nFind the attacker's")],
        finish_reason="length"))
    told = str(seen[1][-1].parts[0].content)
    assert told.startswith("Your reply was cut at the output cap (3000 tokens)") and "No action found" not in told
    assert reason == ("the Modifier did not finish: it used its 2 requests without a ```done block; 2 of its replies "
                      "were cut at the output cap of 3000 tokens; raise max_output_tokens under [llm.roles.modifier]")
