"""Model configuration: `--model provider:name`, `--base-url`, and the `[llm]` table of `envevo.toml`.

Every role (proposer, reviewer, modifier, judge) resolves to one `ModelSpec`. A role's own table overrides the
run-wide defaults, and command-line values override the file, so a paper-style setup (a different model per role)
is a few lines of TOML::

    [llm]
    model = "openai:gpt-4.1"
    max_cost_usd = 25.0

    [llm.roles.modifier]
    model = "anthropic:claude-sonnet-4-5"

    [llm.roles.judge]
    model = "openai:Qwen/Qwen3-32B"
    base_url = "http://gpu-box:8000/v1"
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envevo.llm._errors import LLMConfigError
from envevo.llm._retry import DEFAULT_BUDGET_SEC

Role = Literal["proposer", "reviewer", "modifier", "judge"]
ROLES: tuple[Role, ...] = get_args(Role)
Provider = Literal["openai", "anthropic"]

# OpenAI-compatible servers are all spoken to as "openai"; these names are accepted for readability.
_ALIASES = {"openai": "openai", "anthropic": "anthropic", "vllm": "openai", "sglang": "openai",
            "openai-compatible": "openai", "local": "openai"}
_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
CONFIG_FILE = "envevo.toml"


class Price(BaseModel):
    """USD per million tokens; overrides genai-prices for a model (e.g. a self-hosted one, priced at 0)."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


class ModelSpec(BaseModel):
    """One concrete model: which API, which model name, and where."""

    model_config = ConfigDict(frozen=True)
    provider: Provider
    name: str
    base_url: str | None = None
    api_key_env: str | None = None

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"

    @property
    def endpoint(self) -> str:
        """What concurrency is bounded per: one server (or one hosted API)."""
        return self.base_url or f"{self.provider}-hosted"

    @property
    def key_env(self) -> str:
        return self.api_key_env or _KEY_ENV[self.provider]

    def api_key(self) -> str | None:
        """The key from the environment. Local OpenAI-compatible servers usually need none, so a base URL
        without a key gets a placeholder (vLLM and SGLang accept any key unless started with one)."""
        key = os.environ.get(self.key_env)
        if key:
            return key
        return "not-needed" if self.base_url and self.api_key_env is None else None


def parse_model(text: str, base_url: str | None = None, api_key_env: str | None = None) -> ModelSpec:
    """`provider:name` (the name may itself contain colons), or a bare name when a base URL is given."""
    text = text.strip()
    head, sep, rest = text.partition(":")
    if sep and head.lower() in _ALIASES and rest:
        provider, name = _ALIASES[head.lower()], rest
    elif base_url:
        provider, name = "openai", text
    else:
        raise LLMConfigError(
            f"model {text!r} names no provider: use provider:name, e.g. openai:gpt-4.1 or anthropic:claude-sonnet-4-5, "
            "or give --base-url for an OpenAI-compatible server"
        )
    if head.lower() in ("vllm", "sglang", "openai-compatible", "local") and not base_url:
        raise LLMConfigError(f"model {text!r} is a local OpenAI-compatible server: give its --base-url (e.g. http://localhost:8000/v1)")
    return ModelSpec(provider=provider, name=name, base_url=base_url or None, api_key_env=api_key_env)


OutputMode = Literal["auto", "tool", "native", "prompted"]
#: Servers that enforce a JSON-schema `response_format` with a grammar, as their `GET /models` names itself
#: (`owned_by`): there `auto` asks structured answers as JSON schema (`native`), elsewhere as tool calls.
GRAMMAR_SERVERS = frozenset({"llamacpp", "vllm", "sglang"})

#: A role's output cap when `max_output_tokens` is unset: room for its largest answer several times over (a ξ or a
#: plan of a few thousand tokens; a judge's reason per criterion; a Modifier turn writing a whole file) ...
ANSWER_TOKENS: dict[Role, int] = {"proposer": 8192, "reviewer": 4096, "modifier": 8192, "judge": 8192}
#: ... plus what a reasoning model thinks first (OpenAI asks to reserve ~25k for reasoning and answer together).
REASONING_TOKENS = 16384
#: Anthropic's budget per `thinking` level (pydantic-ai's map) above REASONING_TOKENS: the cap must exceed it.
_THINKING_BUDGETS = {"xhigh": 32768, "max": 32768}


class RoleSettings(BaseModel):
    """One role's model and how it is asked. Any other key is a pydantic-ai model setting, passed through as given
    (checked against pydantic-ai's names when the runtime starts): `thinking = "high"`,
    `openai_reasoning_effort = "high"`, `anthropic_thinking = { type = "enabled", budget_tokens = 8000 }`, `top_p`…"""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    output_mode: OutputMode | None = Field(None, description="this role's structured-output mode; default [llm] output_mode")
    # The Modifier only: "tools" (tool calls) or "text" (fenced-block actions, for servers without tool calling).
    actions: Literal["tools", "text"] | None = None

    def passed_through(self) -> dict[str, Any]:
        """The model settings given under names of their own (everything not a field above)."""
        return dict(self.model_extra or {})

    def output_cap(self, role: Role) -> int:
        """`max_output_tokens`, else the role's default: its answer's room plus the reasoning allowance, or the
        thinking budget the role asks for when that is larger (Anthropic refuses a cap at or below it)."""
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        extra = self.passed_through()
        thinking = extra.get("anthropic_thinking")
        budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
        asked = max(budget if isinstance(budget, int) else 0, _THINKING_BUDGETS.get(str(extra.get("thinking")), 0))
        return ANSWER_TOKENS[role] + max(REASONING_TOKENS, asked)


class LLMSettings(BaseModel):
    """Everything the LLM engine needs to know about models, limits and rubrics."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(None, description="provider:name used by every role without its own")
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key (default per provider)")
    roles: dict[Role, RoleSettings] = Field(default_factory=dict)
    max_concurrency: int = Field(4, ge=1, description="model requests in flight per endpoint")
    timeout_sec: float = Field(180.0, gt=0, description="one HTTP attempt; a timeout is retried")
    answer_timeout_sec: float = Field(600.0, gt=0,
                                      description="wall-clock cap on one model answer, streamed or not; not retried")
    retry_budget_sec: float = Field(DEFAULT_BUDGET_SEC, gt=0,
                                    description="how long one request keeps retrying 429, 5xx, timeouts and dropped connections")
    max_retries: int | None = Field(None, ge=0, description="an extra cap on the retries of one request (default: the time budget only)")
    max_backoff_sec: float = Field(60.0, gt=0, description="longest wait between retries unless the server asks for more")
    stream: bool = Field(True, description="stream answers, so a long reasoning answer is not cut by timeout_sec")
    prompt_cache: bool = Field(True, description="mark the stable prompt prefix cacheable where the provider needs it (Anthropic)")
    openai_api: Literal["auto", "chat", "responses"] = Field(
        "auto", description="OpenAI's API: auto is Responses for OpenAI's own reasoning models, Chat Completions otherwise")
    output_mode: OutputMode = Field(
        "auto", description="how structured answers are requested: tool calls, JSON-schema response_format, or "
                            "prompt+parse; auto: JSON schema on a server that enforces it (llama.cpp, vLLM, SGLang, "
                            "found by the preflight), tool calls elsewhere")
    max_cost_usd: float | None = Field(None, gt=0, description="per lineage, and once more for the model calls outside "
                                       "lineages (seeds, verify, audit)")
    max_tokens: int | None = Field(None, gt=0, description="input+output tokens per lineage, and once more for the "
                                   "calls outside lineages")
    rubrics: list[Path] = Field(default_factory=list, description="extra rubric TOML files for the judge")
    prices: dict[str, Price] = Field(default_factory=dict, description="provider:name -> USD per million tokens")
    record_dir: Path | None = Field(None, description="save every model exchange here (--record)")
    replay_dir: Path | None = Field(None, description="answer every model request from this recording (--replay)")
    modifier_requests: int = Field(40, ge=1, description="model requests per Modifier attempt (tool calls included)")
    command_timeout_sec: float = Field(300.0, gt=0, description="a Modifier command inside the candidate's container")
    output_retries: int = Field(2, ge=0, description="re-asks after a malformed or invalid structured answer")

    def spec(self, role: Role) -> ModelSpec:
        own = self.roles.get(role) or RoleSettings()
        model = own.model or self.model
        if not model:
            raise LLMConfigError(
                f"no model for the {role}: pass --model provider:name, or set model under [llm] "
                f"(or [llm.roles.{role}]) in {CONFIG_FILE}"
            )
        return parse_model(model, base_url=own.base_url or self.base_url, api_key_env=own.api_key_env or self.api_key_env)

    def role(self, role: Role) -> RoleSettings:
        return self.roles.get(role) or RoleSettings()

    def specs(self) -> dict[Role, ModelSpec]:
        return {r: self.spec(r) for r in ROLES}

    def with_overrides(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        role_models: dict[str, str] | None = None,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        rubrics: list[Path] | None = None,
        prices: dict[str, Price] | None = None,
        record_dir: Path | None = None,
        replay_dir: Path | None = None,
    ) -> LLMSettings:
        """Command-line values over the file's. `--model` replaces every role's model that came from the file's
        default; `role_models` (e.g. from `--role-model judge=openai:gpt-4.1-mini`) replaces single roles."""
        update: dict = {}
        roles = {r: s.model_copy() for r, s in self.roles.items()}
        if model is not None:
            update["model"] = model
        if base_url is not None:
            update["base_url"] = base_url
        if api_key_env is not None:
            update["api_key_env"] = api_key_env
        for role, m in (role_models or {}).items():
            if role not in ROLES:
                raise LLMConfigError(f"unknown role {role!r} in a role model; roles are {', '.join(ROLES)}")
            roles[role] = (roles.get(role) or RoleSettings()).model_copy(update={"model": m})
        update["roles"] = roles
        if max_cost_usd is not None:
            update["max_cost_usd"] = max_cost_usd
        if max_tokens is not None:
            update["max_tokens"] = max_tokens
        if rubrics:
            update["rubrics"] = [*self.rubrics, *rubrics]
        if prices:
            update["prices"] = {**self.prices, **prices}
        if record_dir is not None:
            update["record_dir"] = record_dir
        if replay_dir is not None:
            update["replay_dir"] = replay_dir
        return self.model_copy(update=update)

    def price(self, spec: ModelSpec) -> Price | None:
        return self.prices.get(spec.label) or self.prices.get(spec.name)


def load_settings(path: str | os.PathLike[str] | None = None) -> LLMSettings:
    """The `[llm]` table of `path`, or of ./envevo.toml when no path is given (absent file: defaults).

    Relative rubric paths are taken relative to the config file.
    """
    explicit = path is not None
    file = Path(path) if path is not None else Path(CONFIG_FILE)
    if not file.is_file():
        if explicit:
            raise LLMConfigError(f"config file {file} does not exist; create it or drop --config")
        return LLMSettings()
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise LLMConfigError(f"{file} is not valid TOML: {e}") from e
    table = data.get("llm") or {}
    if not isinstance(table, dict):
        raise LLMConfigError(f"{file}: [llm] must be a table")
    try:
        settings = LLMSettings.model_validate(table)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LLMConfigError(f"{file}: [llm] {where}: {first['msg']}") from e
    base = file.resolve().parent
    return settings.model_copy(update={"rubrics": [p if p.is_absolute() else base / p for p in settings.rubrics]})
