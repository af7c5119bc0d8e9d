"""Build pydantic-ai models for a ModelSpec: OpenAI (and any OpenAI-compatible server) or Anthropic.

The SDK clients are built here with `max_retries=0`, so `GuardedModel` owns retrying, and with our timeout.

OpenAI's own reasoning models (o1, o3, o4-mini, gpt-5…) go through the Responses API (`OpenAIResponsesModel`):
there their reasoning items are sent back on the next turn, so a Modifier's later turns keep what it reasoned
before. Chat Completions drops them. Every other OpenAI model, and every OpenAI-compatible server (vLLM, SGLang,
llama.cpp, which speak Chat Completions), uses Chat Completions; `openai_api` in `[llm]` overrides the choice.

The output cap goes to an OpenAI-compatible server as `max_tokens`: every one honours it, while some (llama-cpp-python,
llama.cpp before 2026) silently ignore OpenAI's newer `max_completion_tokens` and would stream without end.
"""

from __future__ import annotations

from pydantic_ai.models import Model

from envevo.llm._config import ModelSpec
from envevo.llm._errors import EndpointUnavailable


def _missing_key(spec: ModelSpec) -> EndpointUnavailable:
    where = f" for {spec.base_url}" if spec.base_url else ""
    return EndpointUnavailable(f"no API key for model {spec.label}{where}; export {spec.key_env}=…")


def sdk_client(spec: ModelSpec, timeout_sec: float):
    """The provider SDK's async client (also used by the preflight)."""
    key = spec.api_key()
    if key is None:
        raise _missing_key(spec)
    if spec.provider == "anthropic":
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(api_key=key, base_url=spec.base_url, max_retries=0, timeout=timeout_sec)
    from openai import AsyncOpenAI

    return AsyncOpenAI(api_key=key, base_url=spec.base_url, max_retries=0, timeout=timeout_sec)


_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "codex")


def uses_responses_api(spec: ModelSpec, openai_api: str = "auto") -> bool:
    if spec.provider != "openai" or openai_api == "chat":
        return False
    return openai_api == "responses" or (spec.base_url is None and spec.name.lower().startswith(_REASONING_PREFIXES))


def build_model(spec: ModelSpec, timeout_sec: float, openai_api: str = "auto") -> Model:
    client = sdk_client(spec, timeout_sec)
    if spec.provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(spec.name, provider=AnthropicProvider(anthropic_client=client))
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=client)
    if uses_responses_api(spec, openai_api):
        return OpenAIResponsesModel(spec.name, provider=provider)
    if spec.base_url is None or spec.name.lower().startswith(_REASONING_PREFIXES):  # OpenAI's own reasoning models
        return OpenAIChatModel(spec.name, provider=provider)  # take only max_completion_tokens, even behind a proxy
    from pydantic_ai.profiles import merge_profile
    from pydantic_ai.profiles.openai import OpenAIModelProfile

    legacy_cap = OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False)
    return OpenAIChatModel(spec.name, provider=provider, profile=merge_profile(provider.model_profile(spec.name), legacy_cap))
