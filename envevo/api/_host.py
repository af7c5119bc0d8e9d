"""What every entry point that runs trials does before the first container starts: the host variables tasks may
read, the sandbox preflight, scale-out quotas, the base-image map, and the model its verifiers may call (checked,
so a missing key or a dead endpoint is one line before any sandbox). Errors a user can fix end here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo.api._config import ModelConfig, SandboxConfig, ScaleConfig
from envevo.errors import ExitCode, UserError
from envevo.verify import TrialVerifier, VerificationConfig, parse_mutation, parse_red_team

if TYPE_CHECKING:
    from envevo.evolve import Executor
    from envevo.llm import LLMRuntime
    from envevo.task import ImageMap

#: A line of progress or a note, for the caller to show (the CLI prints it on stderr).
Notify = Callable[[str], None]
#: `progress(description, total)` gives a context whose value is called once per unit done with a line.
Progress = Callable[[str, int], AbstractContextManager[Callable[[str], None]]]


def quiet(_line: str) -> None:
    """The library's default `notify`: says nothing."""


@contextmanager
def no_progress(_description: str, _total: int) -> Iterator[Callable[[str], None]]:
    """The library's default `progress`: counts nothing."""
    yield quiet


def project_file(project: Path | None) -> Path | None:
    """The project's settings file: the one given, else ./envevo.toml if present."""
    from envevo.task import DEFAULT_CONFIG_FILE

    if project is None and Path(DEFAULT_CONFIG_FILE).is_file():
        return Path(DEFAULT_CONFIG_FILE)
    return project


def prepare_host(sandbox: SandboxConfig, scale: ScaleConfig, notify: Notify = quiet, *, trials: bool = True,
                 preflight: bool = True) -> tuple[ImageMap, Executor]:
    """Host variables, the sandbox preflight, scale-out quotas: before any container starts. Gives the image map
    (`image_map` over the project file's [images]) and the executor."""
    from envevo.evolve import scale_out
    from envevo.sandbox import preflight as check_sandbox
    from envevo.task import load_image_map, pass_env_in_config, pass_host_env

    pass_host_env([*sandbox.pass_env, *pass_env_in_config(project_file(sandbox.project))])
    if preflight:
        check_sandbox(sandbox.env, notify=notify)
    executor = scale_out(scale.executor, scale.ray_address, scale.max_sandboxes, scale.start_rate, trials=trials)
    return load_image_map(list(sandbox.image_map), sandbox.project), executor


async def verification_model(model: ModelConfig, verification: VerificationConfig) -> LLMRuntime | None:
    """The command's model runtime when a verifier asks for one (the red team on, or model mutants), else None.
    Without a configured model the hacker is skipped, with a note; model mutants need one."""
    from envevo.llm import LLMConfigError, LLMRuntime, settings_with_options

    if verification.model_mutants and not parse_mutation(verification.mutation)[0]:
        raise UserError(f"--model-mutants {verification.model_mutants} adds to the mutation verifier's near misses: "
                        "pass --mutation on (or sample:N) too")
    if not parse_red_team(verification.red_team)[0] and not verification.model_mutants:
        given = [flag for flag, value in (("--model", model.model), ("--base-url", model.base_url),
                                          ("--max-tokens", model.max_tokens)) if value is not None]
        if given:
            raise UserError(f"{given[0]} is used here by the red team's LLM hacker (--red-team on) and by "
                            "--model-mutants; neither is asked")
        return None
    runtime = LLMRuntime(settings_with_options(model.project, model.model, model.base_url, model.api_key_env,
                                               max_tokens=model.max_tokens))
    try:
        runtime.spec("judge")  # the hacker and the mutant writer use the judge's model
    except LLMConfigError as e:
        if verification.model_mutants:
            raise UserError(f"--model-mutants needs a model (--model, or model under [llm] in envevo.toml): {e}") from None
        return runtime  # the hacker says it was skipped, and why
    await runtime.preflight(("judge",))  # a missing key or a dead endpoint: one line, before any sandbox
    return runtime


def verifiers_for(verification: VerificationConfig, runtime: LLMRuntime | None, *,
                  learn_rubric: bool = True) -> list[TrialVerifier]:
    """The container verifiers `verification` asks for, with `runtime` lent to those that call a model."""
    from envevo.llm import verifiers_with_model

    return verifiers_with_model(verification.repeats, red_team=verification.red_team, mutation=verification.mutation,
                                runtime=runtime, learn_rubric=verification.learn_rubric if learn_rubric else None,
                                written=verification.model_mutants, probes=verification.probes)


def model_usage(runtime: LLMRuntime | None) -> list[dict[str, Any]]:
    """Calls, tokens and cost per role and model of what the command asked its model ([] when it asked nothing)."""
    from envevo.llm import usage_rows

    return usage_rows(runtime.meter.records) if runtime is not None else []


def budget_stop(runtime: LLMRuntime | None) -> str | None:
    """The one line saying the command's cap stopped its model (what was spent, how to raise it), or None."""
    why = runtime.meter.over_budget(None) if runtime is not None else None
    if why is None:
        return None
    return (f"model calls stopped: {why}; the verdicts that still needed the model are inconclusive: raise "
            "--max-tokens (or max_tokens / max_cost_usd under [llm] in envevo.toml) and run again")


def verdicts_exit_code(statuses: Iterable[str]) -> int:
    """The exit code of a command that verified tasks: fail (1) over inconclusive (3) over weak (4) over ok (0)."""
    seen = set(statuses)
    for status, code in (("fail", ExitCode.FAIL), ("inconclusive", ExitCode.INCONCLUSIVE), ("weak", ExitCode.WEAK)):
        if status in seen:
            return int(code)
    return int(ExitCode.OK) if seen <= {"ok"} else int(ExitCode.FAIL)
