"""The shared LLM runtime of a run: one guarded model per role, the meter, the endpoint gates.

Roles run their pydantic-ai agents through `LLMRuntime.run`, which scopes usage to (role, lineage,
generation) and turns "the model gave no usable answer" into `RoleFailed`, so callers handle one exception
for malformed output, refusals and rejected requests alike; its reason is told in envevo's settings
(envevo/llm/_reasons.py).

Every answer is bounded: each role's request carries an output cap (`max_output_tokens`, else the role's default in
envevo/llm/_config.py), and each answer a wall-clock cap (`answer_timeout_sec`, envevo/llm/_guard.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar, cast

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.models import Model
from pydantic_ai.output import NativeOutput, PromptedOutput
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import UsageLimits

from envevo.llm._config import GRAMMAR_SERVERS, ROLES, LLMSettings, ModelSpec, Role
from envevo.llm._errors import LLMConfigError, RoleFailed
from envevo.llm._guard import EndpointGates, GuardedModel, RetryPolicy
from envevo.llm._meter import Meter, UsageRecord, require_prices
from envevo.llm._preflight import preflight
from envevo.llm._providers import build_model
from envevo.llm._reasons import role_failure

OutputT = TypeVar("OutputT")


class LLMRuntime:
    """Models per role, built lazily from settings (or given directly, e.g. pydantic-ai's FunctionModel in tests)."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        models: Mapping[str, Model] | None = None,
        on_usage: Callable[[UsageRecord], None] | None = None,
        sleep=None,
        clock=None,
    ):
        self.settings = settings
        self.meter = Meter(settings.max_cost_usd, settings.max_tokens, on_usage)
        self.gates = EndpointGates(settings.max_concurrency)
        self.policy = RetryPolicy(budget_sec=settings.retry_budget_sec, max_retries=settings.max_retries,
                                  max_backoff_sec=settings.max_backoff_sec)
        # The roles whose server enforces a JSON-schema response_format (llama.cpp, vLLM, SGLang): under output_mode
        # "auto" they are asked for JSON schema, the others for tool calls. Found by `preflight`; a replay reads the
        # recording's, so that it asks as the recorded run did.
        self.grammar_roles: frozenset[str] = frozenset()
        if models is None and settings.replay_dir is not None:  # every role answers from the recording
            from envevo.llm._replay import Replay

            replay = Replay(settings.replay_dir)
            models = replay.role_models()
            self.grammar_roles = replay.grammar_roles
        self.recorder = None
        if settings.record_dir is not None:
            from envevo.llm._record import Recorder

            self.recorder = Recorder(settings.record_dir)
        self._given = dict(models or {})
        self._sleep = sleep
        self._clock = clock
        self._models: dict[str, GuardedModel] = {}
        self.waits: dict[str, list[float]] = {r: [] for r in ROLES}  # backoffs taken per role
        # Whose lineage generation made a task (by content hash): callers that only see the task, like the red team's
        # hacker, bill that lineage and meet its budget. The LLM engine sets it; (None, None) is outside lineages.
        self.owner: Callable[[str], tuple[str | None, int | None]] = lambda _hash: (None, None)
        for role, own in settings.roles.items():  # a misspelt setting would be ignored silently by the model
            unknown = sorted(set(own.passed_through()) - model_setting_names())
            if unknown:
                raise LLMConfigError(
                    f"[llm.roles.{role}] {', '.join(unknown)}: neither an envevo role setting nor a pydantic-ai model "
                    "setting (e.g. thinking, openai_reasoning_effort, anthropic_thinking, top_p, seed)")

    def spec(self, role: Role) -> ModelSpec:
        if role in self._given:
            m = self._given[role]
            return ModelSpec(provider="openai", name=m.model_name, base_url=f"in-process:{m.system}")
        return self.settings.spec(role)

    def specs(self) -> dict[Role, ModelSpec]:
        return {r: self.spec(r) for r in ROLES}

    def check_prices(self) -> None:
        """A cost cap with an unpriced model is no cap: refuse it now (models given in-process are exempt)."""
        require_prices(self.settings.max_cost_usd,
                       [(self.spec(r), self.settings.price(self.spec(r))) for r in ROLES if r not in self._given])

    def model(self, role: Role) -> GuardedModel:
        if role not in self._models:
            spec = self.spec(role)
            given = self._given.get(role)
            timeout, api = self.settings.timeout_sec, self.settings.openai_api
            kwargs: dict[str, Any] = {"sleep": self._sleep} if self._sleep is not None else {}
            if self._clock is not None:
                kwargs["clock"] = self._clock
            self._models[role] = GuardedModel(
                given or build_model(spec, timeout, api), spec, self.meter, self.gates, self.policy,
                price=self.settings.price(spec), waits=self.waits[role],
                # SDK clients keep connections bound to the loop they were used on: a fresh one per event loop.
                fresh=None if given is not None else (lambda: build_model(spec, timeout, api)),
                stream=self.settings.stream and given is None, recorder=self.recorder,
                answer_timeout_sec=self.settings.answer_timeout_sec, **kwargs,
            )
        return self._models[role]

    async def preflight(self, roles: tuple[Role, ...] = ROLES) -> None:
        """Prices for a cost cap, then key present, endpoint reachable, model served: for every role's endpoint,
        before work starts."""
        self.check_prices()
        asked = [r for r in roles if r not in self._given]
        owners = await preflight([self.spec(r) for r in asked], self.policy)
        self.grammar_roles |= {r for r in asked if owners.get(self.spec(r).endpoint, frozenset()) & GRAMMAR_SERVERS}
        if self.recorder is not None:
            self.recorder.grammar_roles(self.grammar_roles)

    def output_spec(self, output_type: type, role: Role | None = None) -> Any:
        """Structured output in the role's mode (else the run's): tool calls, JSON schema, or prompt-and-parse; "auto"
        (the default) is JSON schema where the role's server enforces it, tool calls elsewhere."""
        mode = (self.settings.role(role).output_mode if role is not None else None) or self.settings.output_mode
        if mode == "auto":
            mode = "native" if role in self.grammar_roles else "tool"
        if mode == "native":
            return NativeOutput(output_type)
        if mode == "prompted":
            return PromptedOutput(output_type)
        return output_type

    def model_settings(self, role: Role) -> ModelSettings:
        """The role's temperature and output cap (its default when unset), prompt caching where the provider needs
        it marked, then every setting the role passes through under pydantic-ai's own name (those win)."""
        own = self.settings.role(role)
        out: dict[str, Any] = {}
        if own.temperature is not None:
            out["temperature"] = own.temperature
        out["max_tokens"] = own.output_cap(role)  # never unbounded: a model that never stops is cut here
        if self.settings.prompt_cache and role not in self._given and self.spec(role).provider == "anthropic":
            # cache_control on the system prompt, the tool definitions and the last message: each request then
            # reads the previous one's prefix. OpenAI caches long prefixes by itself, with nothing to mark.
            out |= {"anthropic_cache_instructions": True, "anthropic_cache_tool_definitions": True,
                    "anthropic_cache_messages": True}
        return cast(ModelSettings, out | own.passed_through())

    def agent(self, role: Role, output_type: type[OutputT], instructions: str, **kwargs: Any) -> Agent[Any, OutputT]:
        agent: Agent[Any, OutputT] = Agent(
            self.model(role),
            output_type=self.output_spec(output_type, role),
            instructions=instructions,
            retries={"output": self.settings.output_retries, "tools": kwargs.pop("tool_retries", 2)},
            model_settings=self.model_settings(role),
            **kwargs,
        )
        return agent

    async def run(
        self,
        agent: Agent[Any, OutputT],
        prompt: str,
        *,
        role: Role,
        lineage: str | None = None,
        generation: int | None = None,
        deps: Any = None,
        request_limit: int = 10,
        meter_as: str | None = None,
    ) -> OutputT:
        """Run an agent for a role and return its output; RoleFailed when the model gave nothing usable.
        `meter_as` names who spent the tokens when it is not the role whose model it uses (the hacker uses the
        judge's)."""
        limits = UsageLimits(request_limit=request_limit)
        with self.meter.scope(meter_as or role, lineage, generation):
            try:
                if _uses_tools(agent) and isinstance(agent.output_type, NativeOutput):
                    # A JSON-schema response_format beside tools makes servers (llama.cpp) force the schema, so no
                    # tool is ever called: a tool-using agent (the Modifier, the hacker) answers through a tool.
                    result = await agent.run(prompt, deps=deps, usage_limits=limits,
                                             output_type=agent.output_type.outputs)
                else:
                    result = await agent.run(prompt, deps=deps, usage_limits=limits)
            except UnexpectedModelBehavior as e:  # malformed or invalid output past its retries, refusals, limits
                raise RoleFailed(role, role_failure(e, role)) from e
            except ModelAPIError as e:  # what GuardedModel does not retry: a rejected request (e.g. over the context window)
                raise RoleFailed(role, role_failure(e, role)) from e
            except UsageLimitExceeded as e:  # the role's request allowance for one call (e.g. a looping Modifier)
                raise RoleFailed(role, role_failure(e, role)) from e
        return result.output


@cache
def model_setting_names() -> frozenset[str]:
    """Every key pydantic-ai's OpenAI (Chat and Responses) and Anthropic models accept in their settings."""
    from pydantic_ai.models.anthropic import AnthropicModelSettings
    from pydantic_ai.models.openai import OpenAIChatModelSettings, OpenAIResponsesModelSettings

    names: set[str] = set()
    for typed in (ModelSettings, OpenAIChatModelSettings, OpenAIResponsesModelSettings, AnthropicModelSettings):
        names |= typed.__required_keys__ | typed.__optional_keys__
    return frozenset(names)


def _uses_tools(agent: Agent[Any, Any]) -> bool:
    """Whether the agent has tools of its own (registered with `@agent.tool…`, or toolsets given)."""
    return any(not isinstance(ts, FunctionToolset) or ts.tools for ts in agent.toolsets)
