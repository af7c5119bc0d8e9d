"""Provider settings per role: model settings passed through (thinking, reasoning effort, temperature), the
structured-output mode per role (tool, native, prompted), prompt caching on Anthropic, the OpenAI API per model."""

import asyncio
import json
import textwrap

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import LLMConfigError, LLMRuntime, LLMSettings, load_settings, parse_model
from envevo.llm._providers import build_model
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.anthropic_server import FakeAnthropic, Script, final
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_server import Script as OpenAIScript
from tests.fakes.openai_server import final as openai_final


class Answer(BaseModel):
    ok: bool
    why: str


def test_role_settings_pass_model_settings_through_from_envevo_toml(tmp_path):
    (tmp_path / "envevo.toml").write_text(textwrap.dedent("""
        [llm]
        model = "openai:gpt-4.1"
        [llm.roles.modifier]
        temperature = 0.2
        thinking = "high"
        openai_reasoning_effort = "high"
        [llm.roles.judge]
        anthropic_thinking = { type = "enabled", budget_tokens = 8000 }
        top_p = 0.9
    """))
    settings = load_settings(tmp_path / "envevo.toml")
    seen = {}

    def answer(messages, info: AgentInfo):
        seen["settings"] = dict(info.model_settings or {})
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"ok": True, "why": "x"})])

    rt = LLMRuntime(settings, models={"judge": FunctionModel(answer)})
    asyncio.run(rt.run(rt.agent("judge", Answer, "go"), "q", role="judge"))
    assert seen["settings"] == {"anthropic_thinking": {"type": "enabled", "budget_tokens": 8000}, "top_p": 0.9,
                                "max_tokens": 8192 + 16384}  # the judge's default output cap

    # On the wire: the real OpenAI client sends the modifier's temperature and reasoning effort.
    script = OpenAIScript(modifier=[openai_final({"ok": True, "why": "x"})])
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        wired = settings.model_copy(update={"model": "openai:fake-model", "base_url": server.url})
        rt = LLMRuntime(wired)
        asyncio.run(rt.run(rt.agent("modifier", Answer, "envevo-role: modifier"), "q", role="modifier"))
    [body] = server.requests
    assert body["temperature"] == 0.2 and body["reasoning_effort"] == "high"


def test_a_misspelt_setting_is_one_clear_error_not_silently_ignored(tmp_path):
    settings = LLMSettings.model_validate({"model": "openai:x", "roles": {"judge": {"temprature": 0.1}}})
    with pytest.raises(LLMConfigError, match=r"\[llm.roles.judge\] temprature: neither an envevo role setting"):
        LLMRuntime(settings)


def _mode_model(mode: str, seen: list):
    """A model that answers the way each output mode asks: an output-tool call, or JSON text."""

    def answer(messages, info: AgentInfo):
        seen.append((info.model_request_parameters.output_mode, bool(info.output_tools), info.instructions or ""))
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"ok": True, "why": mode})])
        return ModelResponse(parts=[TextPart(json.dumps({"ok": True, "why": mode}))])

    return FunctionModel(answer)


@pytest.mark.parametrize("mode", ["tool", "native", "prompted"])
def test_each_output_mode_is_requested_and_parsed_per_role(mode):
    seen: list = []
    # The run-wide mode is something else: the role's own mode wins.
    other = "prompted" if mode != "prompted" else "tool"
    settings = LLMSettings.model_validate({"output_mode": other, "roles": {"reviewer": {"output_mode": mode}}})
    rt = LLMRuntime(settings, models={"reviewer": _mode_model(mode, seen)})
    out = asyncio.run(rt.run(rt.agent("reviewer", Answer, "review"), "q", role="reviewer"))
    assert out == Answer(ok=True, why=mode)
    [(requested, has_output_tool, instructions)] = seen
    assert requested == mode and has_output_tool is (mode == "tool")
    if mode == "prompted":  # the schema travels in the prompt
        assert '"why"' in instructions


def test_the_run_wide_mode_applies_to_roles_without_their_own():
    seen: list = []
    rt = LLMRuntime(LLMSettings(output_mode="native"), models={"judge": _mode_model("native", seen)})
    asyncio.run(rt.run(rt.agent("judge", Answer, "j"), "q", role="judge"))
    assert seen[0][0] == "native"


def test_openai_reasoning_models_use_the_responses_api_and_servers_chat_completions(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")

    def kind(text, base_url=None, api="auto"):
        return type(build_model(parse_model(text, base_url=base_url), 10.0, api))

    assert kind("openai:o3") is OpenAIResponsesModel and kind("openai:gpt-5-mini") is OpenAIResponsesModel
    assert kind("openai:gpt-4.1") is OpenAIChatModel
    assert kind("openai:gpt-oss-20b", base_url="http://gpu:8000/v1") is OpenAIChatModel  # vLLM speaks Chat
    assert kind("openai:gpt-4.1", api="responses") is OpenAIResponsesModel
    assert kind("openai:o3", api="chat") is OpenAIChatModel


def test_anthropic_requests_mark_the_system_prompt_tools_and_history_cacheable(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    for cache in (True, False):
        script = Script(judge=[final(lf.task_review())])
        with FakeAnthropic(script) as server, override_allow_model_requests(True):
            settings = LLMSettings(model="anthropic:fake-model", base_url=server.url, prompt_cache=cache)
            engine, _ = build_llm_engine(settings, container_shell=False)
            asyncio.run(engine.judge().check(load_task(lf.SEED), lf.SEED))
        [request] = server.requests
        marked = [json.dumps(request["system"]), json.dumps(request["tools"][-1]),
                  json.dumps(request["messages"][-1]["content"][-1])]
        assert all(("cache_control" in part) is cache for part in marked), marked
