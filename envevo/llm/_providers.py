"""Build pydantic-ai models for a ModelSpec: OpenAI (and any OpenAI-compatible server) or Anthropic.

The SDK clients are built here with `max_retries=0`, so `GuardedModel` owns retrying, and with our timeout.
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


def build_model(spec: ModelSpec, timeout_sec: float) -> Model:
    client = sdk_client(spec, timeout_sec)
    if spec.provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(spec.name, provider=AnthropicProvider(anthropic_client=client))
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    # Chat Completions is what every OpenAI-compatible server (vLLM, SGLang, llama.cpp, …) speaks.
    return OpenAIChatModel(spec.name, provider=OpenAIProvider(openai_client=client))
