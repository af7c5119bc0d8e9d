"""The config models every entry point composes: where trials run (`SandboxConfig`), what verifies a task
(`envevo.verify.VerificationConfig`), the model the verifiers may call (`ModelConfig`) and how work scales out
(`ScaleConfig`). Their defaults are the CLI's: the commands read their option defaults from these fields."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from envevo.evolve import EvolveConfig
from envevo.verify import VerificationConfig

_RUN = EvolveConfig.model_fields


class SandboxConfig(BaseModel):
    """Where and how many sandbox trials run, and what of the host they may see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env: str = Field(_RUN["env"].default, description="podman, docker or bwrap (envevo's local sandboxes), "
                                                      "harbor:podman, a cloud environment (daytona, modal, e2b, …) or "
                                                      "pkg.mod:Class")
    trial_concurrency: int = Field(_RUN["trial_concurrency"].default, ge=1, description="sandbox trials running at once")
    image_map: tuple[str, ...] = Field((), description="base-image rewrites FROM=TO, over [images] of the project file")
    pass_env: tuple[str, ...] = Field((), description="host variables tasks may read through ${NAME} in task.toml, "
                                                      "beside [sandbox] pass_env of the project file")
    project: Path | None = Field(None, description="the project's settings file, envevo.toml (default: ./envevo.toml "
                                                   "if present)")


class ModelConfig(BaseModel):
    """The model a command's verifiers call (the red team's LLM hacker, model-written near misses): the [llm] table
    of the project file with these on top."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = Field(None, description="PROVIDER:NAME (docs/llm.md)")
    base_url: str | None = Field(None, description="an OpenAI-compatible endpoint")
    api_key_env: str | None = Field(None, description="the environment variable holding the API key")
    max_tokens: int | None = Field(None, ge=1, description="tokens the command's model calls may spend in all (per "
                                                          "lineage for `evolve`)")
    project: Path | None = Field(None, description="the project's settings file, envevo.toml")
    # An engine's own models (`evolve --engine llm`): per-role models, cost caps and prices, recording and replay.
    role_models: tuple[str, ...] = Field((), description="ROLE=PROVIDER:NAME per role")
    max_cost: float | None = Field(None, description="USD per lineage (`evolve`)")
    prices: tuple[str, ...] = Field((), description="PROVIDER:NAME=IN,OUT: USD per million tokens")
    record: Path | None = Field(None, description="save every model exchange to this folder")
    replay: Path | None = Field(None, description="answer every model request from this recording")


class ScaleConfig(BaseModel):
    """Scale-out (docs/scale.md): the executor, and the sandbox quotas shared by everything the command starts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    executor: str = Field("asyncio", description="asyncio (this process) or ray")
    ray_address: str | None = Field(None, description="the Ray cluster to join; default: a local one")
    max_sandboxes: int | None = Field(None, ge=1, description="sandboxes alive at once")
    start_rate: float | None = Field(None, gt=0, description="sandbox starts per second, at most")


class CheckConfig(BaseModel):
    """What `verify`, `audit` and `seeds select` compose: sandbox, verification, model and scale-out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sandbox: SandboxConfig = SandboxConfig()
    verification: VerificationConfig = VerificationConfig()
    model: ModelConfig = ModelConfig()
    scale: ScaleConfig = ScaleConfig()


__all__ = ["CheckConfig", "ModelConfig", "SandboxConfig", "ScaleConfig", "VerificationConfig"]
