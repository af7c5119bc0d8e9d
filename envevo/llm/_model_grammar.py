"""One way to name a model on every command: `PROVIDER:NAME` (docs/llm.md, "Naming a model").

- PROVIDER is `openai` or `anthropic`; `vllm`, `sglang`, `openai-compatible` and `local` name an OpenAI-compatible
  server and need `--base-url`. Agents run by Harbor (`envevo rollout`) reach models through LiteLLM, so there any
  LiteLLM provider works too (`gemini:…`, `openrouter:…`, `hosted_vllm:…`).
- NAME is the provider's model name and may itself hold `/` and `:` (`openai:Qwen/Qwen3-32B`).
- With `--base-url`, a bare NAME is the model name that server serves (`--model Qwen/Qwen3-32B --base-url …`).

Older spellings are still read where they mean one thing: LiteLLM's `PROVIDER/NAME` (what `envevo rollout` took),
and `openai/NAME` or `anthropic/NAME` elsewhere when no base URL is given (that used to be an error). With a base
URL, the LLM engine keeps reading a slashed name as the served name, as it always did.
"""

from __future__ import annotations

#: Providers the LLM engine speaks to (pydantic-ai); the OpenAI-compatible aliases all mean "openai".
ENGINE_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "vllm": "openai", "sglang": "openai",
                    "openai-compatible": "openai", "local": "openai"}
#: Further LiteLLM providers a Harbor agent can use.
LITELLM_PROVIDERS = frozenset({
    "azure", "bedrock", "cerebras", "cohere", "databricks", "deepseek", "fireworks_ai", "gemini", "groq",
    "hosted_vllm", "huggingface", "mistral", "nvidia_nim", "ollama", "ollama_chat", "openrouter", "perplexity",
    "sambanova", "together_ai", "vertex_ai", "watsonx", "xai",
})


def normalize_model(text: str, *, base_url: str | None = None, litellm: bool = False) -> str:
    """`text` in the one grammar, `PROVIDER:NAME`; unknown shapes are returned unchanged for the consumer to judge.

    `litellm`: the model goes to a Harbor agent (LiteLLM), which knows more providers and took `PROVIDER/NAME`.
    """
    text = text.strip()
    known = ENGINE_PROVIDERS.keys() | LITELLM_PROVIDERS if litellm else ENGINE_PROVIDERS.keys()
    head, sep, rest = text.partition(":")
    if sep and rest and head.lower() in known:
        return f"{head.lower()}:{rest}"
    head, sep, rest = text.partition("/")
    if sep and rest and head.lower() in known and (litellm or not base_url):
        return f"{head.lower()}:{rest}"
    if base_url:
        return f"openai:{text}"
    return text


def litellm_model(text: str, *, base_url: str | None = None) -> str:
    """The LiteLLM name (`provider/name`) a Harbor agent takes for a model in the one grammar; a name without a
    provider is passed on as it is (LiteLLM infers some, e.g. gpt-4.1)."""
    canonical = normalize_model(text, base_url=base_url, litellm=True)
    head, sep, rest = canonical.partition(":")
    if not sep or head not in ENGINE_PROVIDERS.keys() | LITELLM_PROVIDERS:
        return canonical
    return f"{ENGINE_PROVIDERS.get(head, head)}/{rest}"
