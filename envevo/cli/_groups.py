"""Option groups: a block of options declared once, as a dataclass of `Annotated` fields, and reused by every command
that takes it. A command names the group as one parameter (`sandbox: SandboxOptions`); `@grouped` spreads the
group's fields into the command's signature, where typer sees ordinary options, and packs them back into the
dataclass before the command runs. Each group builds its library config model (`envevo.api`) from fields named as the
model's, and its defaults are that model's field defaults, so the CLI and the library cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError

from envevo.api import CheckConfig, ModelConfig, SandboxConfig, ScaleConfig, VerificationConfig
from envevo.cli import _options as o
from envevo.cli._common import renamed
from envevo.errors import UserError

_S, _V, _M, _X = SandboxConfig(), VerificationConfig(), ModelConfig(), ScaleConfig()


def built[M: BaseModel](kind: type[M], /, **values: Any) -> M:
    """`model(**values)`, a value the model refuses said in one line (its validator's, which names the option)."""
    try:
        return kind(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(str(first["msg"]).removeprefix("Value error, ")) from None


class _Group:
    """An option group whose fields are named as its config model's (a repeatable option's list given as a tuple);
    a field named `old_*` is an old spelling, which the group reads before building its model."""

    def _values(self, group: type, *skip: str) -> dict[str, object]:
        """The values of `group`'s own fields (a command may take several groups as one, `CheckOptions`)."""
        return {f.name: tuple(v) if isinstance(v, list) else v for f in dataclasses.fields(group)
                if not f.name.startswith("old_") and f.name not in skip for v in [getattr(self, f.name)]}


@dataclass
class SandboxOptions(_Group):
    """Where trials run and what of the host they see: --env, --trial-concurrency, --image-map, --pass-env,
    --config."""

    env: o.Env = _S.env
    trial_concurrency: o.TrialConcurrency = _S.trial_concurrency
    image_map: o.ImageMapOpt = field(default_factory=list)
    pass_env: o.PassEnv = field(default_factory=list)
    project: o.ConfigFile = None

    def sandbox_config(self) -> SandboxConfig:
        return built(SandboxConfig, **self._values(SandboxOptions))


@dataclass
class TrialOptions(SandboxOptions):
    """The sandbox options of a command whose --concurrency meant trials (`verify`, `audit`, `seeds select`,
    `rollout`): that old spelling is read, with one deprecation line (`evolve`'s meant lineages)."""

    old_concurrency: o.OldTrialConcurrency = None

    def sandbox_config(self) -> SandboxConfig:
        trials = renamed(self.old_concurrency, self.trial_concurrency, "--concurrency", "--trial-concurrency",
                         unset=_S.trial_concurrency)
        return built(SandboxConfig, **self._values(SandboxOptions) | {"trial_concurrency": trials})


@dataclass
class VerificationOptions(_Group):
    """What verifies a task: --repeats, --red-team, --mutation, --model-mutants, --learn-rubric."""

    repeats: o.Repeats = _V.repeats
    red_team: o.RedTeam = _V.red_team
    mutation: o.Mutation = _V.mutation
    model_mutants: o.ModelMutants = _V.model_mutants
    learn_rubric: o.LearnRubric = _V.learn_rubric

    def verification_config(self) -> VerificationConfig:
        return built(VerificationConfig, **self._values(VerificationOptions))


@dataclass
class ModelOptions(_Group):
    """The model the verifiers call: --model, --base-url, --api-key-env, --max-tokens (with --config's [llm])."""

    model: o.Model = _M.model
    base_url: o.BaseUrl = _M.base_url
    api_key_env: o.ApiKeyEnv = _M.api_key_env
    max_tokens: o.CommandMaxTokens = _M.max_tokens

    def model_config(self, project: Path | None) -> ModelConfig:
        return built(ModelConfig, **self._values(ModelOptions), project=project)


EngineMaxTokens = Annotated[int | None, typer.Option("--max-tokens", rich_help_panel=o.LLM, help="Tokens per lineage, "
                                                   "same behaviour. The calls outside lineages (the seeds' extraction "
                                                   "and attacks) are one more budget under the same caps.")]


@dataclass
class EngineModelOptions(ModelOptions):
    """An engine's models (`evolve`): the model options, --role-model, --price, --record, --replay, the per-lineage
    caps --max-cost and --max-tokens, and the judge's extra --rubric files."""

    max_tokens: EngineMaxTokens = _M.max_tokens
    role_models: o.RoleModel = field(default_factory=list)
    max_cost: Annotated[float | None, typer.Option("--max-cost", rich_help_panel=o.LLM, help="USD per lineage; "
                                                   "reaching it ends the lineage as budget_exhausted (resumable).")
                        ] = _M.max_cost
    rubric: Annotated[list[Path], typer.Option("--rubric", metavar=o.RUBRIC_METAVAR, rich_help_panel=o.LLM,
                                               help="A rubric TOML the judge reads beside the default one and "
                                                    "[llm] rubrics; repeatable.")] = field(default_factory=list)
    prices: o.PriceOption = field(default_factory=list)
    record: o.RecordDir = _M.record
    replay: o.ReplayDir = _M.replay

    def model_config(self, project: Path | None) -> ModelConfig:
        return built(ModelConfig, **self._values(EngineModelOptions, "rubric"), project=project)


@dataclass
class ScaleOptions(_Group):
    """Scale-out: --executor, --ray-address, --max-sandboxes, --start-rate."""

    executor: o.ExecutorName = _X.executor
    ray_address: o.RayAddress = _X.ray_address
    max_sandboxes: o.MaxSandboxes = _X.max_sandboxes
    start_rate: o.StartRate = _X.start_rate

    def scale_config(self) -> ScaleConfig:
        return built(ScaleConfig, **self._values(ScaleOptions))


@dataclass
class CheckOptions(ScaleOptions, ModelOptions, VerificationOptions, TrialOptions):
    """The options of a command that verifies tasks (`verify`, `audit`, `seeds select`): sandbox, verification, the
    model the verifiers call, scale-out."""

    def check_config(self) -> CheckConfig:
        return CheckConfig(sandbox=self.sandbox_config(), verification=self.verification_config(),
                           model=self.model_config(self.project), scale=self.scale_config())


def grouped[F: Callable[..., Any]](fn: F) -> F:
    """Spread each option-group parameter of `fn` (a dataclass) into its fields, for typer; pack them back on call.
    Every parameter becomes keyword-only (typer passes all by name); a field named like another option is refused."""
    hints = typing.get_type_hints(fn, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for p in inspect.signature(fn).parameters.values():
        hint = hints.get(p.name, p.annotation)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            fields = dataclasses.fields(hint)
            field_hints = typing.get_type_hints(hint, include_extras=True)
            groups[p.name] = (hint, [f.name for f in fields])
            for f in fields:
                default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[operator]
                params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                                annotation=field_hints[f.name]))
        else:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hint))
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise TypeError(f"{fn.__name__}: an option group's field repeats a parameter name: {sorted(names)}")

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        for name, (group, fields) in groups.items():
            kwargs[name] = group(**{f: kwargs.pop(f) for f in fields if f in kwargs})
        return fn(**kwargs)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return typing.cast(F, command)
