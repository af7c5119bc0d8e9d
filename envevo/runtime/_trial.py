"""Run trials through Harbor's Python API and translate the result into a TrialOutcome."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from envevo.runtime import _cleanup
from envevo.runtime._agents import ORACLE_AGENT
from envevo.runtime._archive import copy_failure
from envevo.runtime._envs import resolve_env
from envevo.runtime._harbor import (
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    Trial,
    TrialConfig,
    TrialResult,
)
from envevo.runtime._host_env import host_env_guarded
from envevo.runtime._image_cache import ImageCache
from envevo.runtime._local_exec import trial_notes
from envevo.runtime._outcome import ErrorKind, PhaseTimings, TrialOutcome, TrialSpec, policy_refused
from envevo.runtime._quota import backoff, is_provider_error, provider_wait
from envevo.runtime._quota_env import environment_config

# Harbor exception type names, grouped by what they say about the trial.
_AGENT_TIMEOUT = {"AgentTimeoutError"}
_REWARD_MISSING = {"RewardFileNotFoundError", "RewardFileEmptyError"}
_VERIFIER_ERROR = {"VerifierTimeoutError", "VerifierOutputParseError"}
_BUILD_FAILURE = {"SandboxBuildFailedError"}
_INFRASTRUCTURE = {
    "AddTestsDirError",
    "DownloadVerifierDirError",
    "EnvironmentStartTimeoutError",
    "AgentSetupTimeoutError",
    "HealthcheckError",
    "SandboxLikelyOutOfMemoryError",
    "MemoryLimitExceededError",
    # The model endpoint failing under a real agent (LiteLLM's names): not the agent's fail, so retried.
    "APIConnectionError",
    "ServiceUnavailableError",
    "RateLimitError",
    "AuthenticationError",
    "InternalServerError",
    "StartRefused",  # envevo's quota wrapper: the provider refused a sandbox through every backoff attempt
}
# Exception types that mean a programming error; raised from envevo's own code, they end the run with a traceback
# instead of becoming an infrastructure error (which verdicts read as "inconclusive", hiding the bug).
_BUG_TYPES = (AttributeError, TypeError, NameError, AssertionError, UnboundLocalError)
_BUG_TYPE_NAMES = {t.__name__ for t in _BUG_TYPES}
_ENVEVO_FRAME = re.compile(r'File "[^"]*/envevo/[^"]*\.py"')
_ANY_FRAME = re.compile(r'File "[^"]*"')
# Messages Harbor's compose environments raise when `compose up --build` fails on the image build.
_BUILD_MARKERS = ("error building", "build failed", "failed to build", " build. return code", "returned a non-zero code")
# Harbor quotes the whole compose command line in its errors; the trial dir has it, the one-liner need not.
_COMMAND = re.compile(r"Command: .*?(?=Return code|$)", re.S)


# Harbor's common model-connection settings. They are AgentConfig fields, not agent kwargs (Harbor rejects
# model_api_key_name among the kwargs); a TrialSpec carries them in agent_kwargs, under these names.
CONNECTION_KWARGS = ("base_url", "model_api_key_name", "model_api_format")


# Harbor's oracle with the solution's end state fingerprinted after solve.sh (TrialSpec.fingerprint).
FINGERPRINT_ORACLE = "envevo.runtime._fingerprint_agent:FingerprintOracle"


def _agent_config(spec: TrialSpec) -> AgentConfig:
    kwargs = {k: v for k, v in spec.agent_kwargs.items() if k not in CONNECTION_KWARGS}
    connection = {k: spec.agent_kwargs[k] for k in CONNECTION_KWARGS if spec.agent_kwargs.get(k) is not None}
    which = {"import_path": spec.agent} if ":" in spec.agent else {"name": spec.agent}
    if spec.fingerprint and spec.agent == ORACLE_AGENT:
        which, kwargs = {"import_path": FINGERPRINT_ORACLE}, {**kwargs, "task_dir": str(spec.task_dir.resolve())}
    return AgentConfig(**which, model_name=spec.model, kwargs=kwargs, **connection)


class EnvevoBug(RuntimeError):
    """A programming error in envevo's own trial code (not the task's, the agent's or the machine's)."""


def _innermost_is_envevo(traceback_text: str) -> bool:
    frames = _ANY_FRAME.findall(traceback_text or "")
    return bool(frames) and bool(_ENVEVO_FRAME.fullmatch(frames[-1]))


def _raise_if_bug(exception_type: str, message: str, traceback_text: str, where: str) -> None:
    if exception_type in _BUG_TYPE_NAMES and _innermost_is_envevo(traceback_text):
        raise EnvevoBug(f"{where}: {exception_type}: {message} (a bug in envevo, not the task's or the machine's)\n"
                        f"{traceback_text}")


def _one_line(exc: BaseException) -> str:
    text = str(exc).replace("--api-key-name", "--api-key-env")  # Harbor names its own CLI flag
    text = re.sub(r"\s*Use --skip-credential-checks[^.]*\.", "", text)
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def check_agent(spec: TrialSpec) -> None:
    """Raise ValueError (one line) for an agent config that every trial would fail on: an unknown agent, an
    option it does not take, a missing model, an API key that is not there. Nothing is run or contacted."""
    import logging
    import tempfile
    from pathlib import Path

    from harbor.agents.agent_auth_resolution import resolve_agent_model_connection
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.name import AgentName

    if ":" not in spec.agent and spec.agent not in AgentName.values():
        raise ValueError(f"unknown agent {spec.agent!r}; Harbor's agents: {', '.join(sorted(AgentName.values()))}; "
                         "or give a custom agent as pkg.module:Class")
    config = _agent_config(spec)
    quiet = logging.getLogger("harbor.utils.logger")  # Harbor's agents log through it at DEBUG, to stderr
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        AgentFactory.run_preflight(config)  # importable, options, base URL, API key for a default endpoint
        if config.name and config.name != AgentName.ORACLE.value:
            # What only the constructor checks (e.g. a missing model). Custom agents and the oracle are left out:
            # their constructors may need what only a trial gives (the task dir, the agent's own kwargs).
            with tempfile.TemporaryDirectory() as logs:
                AgentFactory.create_agent_from_config(config, logs_dir=Path(logs))
        connection = resolve_agent_model_connection(config) if config.base_url else None
    except Exception as exc:  # Harbor's errors here are ValueErrors, import errors and TypeErrors: all config
        raise ValueError(_one_line(exc)) from None
    finally:
        quiet.setLevel(level)
    if connection is not None and connection.provider == "openai" and connection.api_key is None:
        # Harbor lets a user endpoint go keyless, but LiteLLM's OpenAI client refuses to send a request without one.
        raise ValueError(f"no API key for {spec.model} at {config.base_url}: set OPENAI_API_KEY "
                         "(any value, e.g. EMPTY, for an endpoint without auth)")


def _environment_config(spec: TrialSpec) -> EnvironmentConfig:
    choice = resolve_env(spec.env, spec.task_dir)
    extra = [_cleanup.overlay_compose_file()] if (choice.compose if choice.import_path else choice.engine) else []
    config: EnvironmentConfig = environment_config(choice, spec.env, extra)
    return config


def trial_config(spec: TrialSpec) -> TrialConfig:
    kwargs = dict(
        task=TaskConfig(path=spec.task_dir.resolve()),
        trials_dir=spec.trials_dir.resolve(),
        agent=_agent_config(spec),
        environment=_environment_config(spec),
        timeout_multiplier=spec.timeout_multiplier,
    )
    if spec.trial_name:
        kwargs["trial_name"] = spec.trial_name
    return TrialConfig(**kwargs)


def _span(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _timings(r: TrialResult) -> PhaseTimings:
    env = r.environment_setup
    agent_start = (r.agent_setup or r.agent_execution).started_at if (r.agent_setup or r.agent_execution) else None
    agent_end = r.agent_execution.finished_at if r.agent_execution else None
    ver = r.verifier
    last = max(
        (t for t in (env and env.finished_at, agent_end, ver and ver.finished_at) if t is not None),
        default=None,
    )
    return PhaseTimings(
        environment_setup=_span(env and env.started_at, env and env.finished_at),
        agent=_span(agent_start, agent_end),
        verifier=_span(ver and ver.started_at, ver and ver.finished_at),
        teardown=_span(last, r.finished_at),
        total=_span(r.started_at, r.finished_at),
    )


def classify(r: TrialResult) -> tuple[ErrorKind, str | None]:
    """Map Harbor's result to one ErrorKind, deciding by exception type first, then by phase."""
    exc = r.exception_info
    if exc is None:
        if r.verifier_result is None or not r.verifier_result.rewards:
            return ErrorKind.REWARD_MISSING, "the verifier produced no reward"
        return ErrorKind.OK, None
    kind = exc.exception_type
    message = _COMMAND.sub("", f"{kind}: {exc.exception_message}").strip()
    message = " ".join(message.split())
    head, sep, output = message.partition(" Stdout: ")
    if sep:  # keep the end of the command output: that is where a build says what failed
        message = f"{head} … {output[-240:]}"
    message = message[:500]
    if kind in _AGENT_TIMEOUT:
        return ErrorKind.AGENT_TIMEOUT, message
    if kind in _REWARD_MISSING:
        return ErrorKind.REWARD_MISSING, message
    if kind in _VERIFIER_ERROR:
        return ErrorKind.VERIFIER_ERROR, message
    if kind in _BUILD_FAILURE:
        return ErrorKind.ENVIRONMENT_BUILD_FAILURE, message
    if kind in _INFRASTRUCTURE or kind == "CancelledError" or is_provider_error(kind, exc.exception_message):
        # A provider's quota, 429, 5xx or a dropped connection, in any phase: not the task's fail, nor the agent's.
        return ErrorKind.INFRASTRUCTURE_ERROR, message
    agent_started = r.agent_execution is not None and r.agent_execution.started_at is not None
    if not agent_started:
        # Failed before the agent ran: the image build, or the sandbox start around it.
        text = exc.exception_message.lower()
        if any(m in text for m in _BUILD_MARKERS):
            return ErrorKind.ENVIRONMENT_BUILD_FAILURE, message
        return ErrorKind.INFRASTRUCTURE_ERROR, message
    if r.verifier_result is not None and r.verifier_result.rewards:
        # The verifier scored the trial after the agent failed (e.g. a command timed out): the agent's failure.
        return ErrorKind.AGENT_ERROR, message
    if r.verifier is not None and r.verifier.started_at is not None:
        return ErrorKind.VERIFIER_ERROR, message
    return ErrorKind.AGENT_ERROR, message


def _turns(r: TrialResult) -> int | None:
    meta = (r.agent_result.metadata if r.agent_result else None) or {}
    for key in ("n_turns", "n_episodes", "turns", "episodes"):
        value = meta.get(key)
        if isinstance(value, int):
            return value
    return None


def to_outcome(spec: TrialSpec, r: TrialResult) -> TrialOutcome:
    kind, message = classify(r)
    notes = trial_notes(spec.trials_dir.resolve() / r.trial_name)
    if (failed := copy_failure(notes)) is not None and kind in (ErrorKind.OK, ErrorKind.REWARD_MISSING):
        kind, message = ErrorKind.INFRASTRUCTURE_ERROR, failed  # scored without an artifact: says nothing of the task
    rewards = dict(r.verifier_result.rewards) if r.verifier_result and r.verifier_result.rewards else {}
    reward = rewards.get("reward", next(iter(rewards.values()), None)) if rewards else None
    n_in, _cache, n_out, cost = r.compute_token_cost_totals()
    return TrialOutcome(
        task=r.task_name,
        agent=spec.agent,
        model=spec.model,
        subject=spec.subject,
        reward=reward,
        rewards={k: float(v) for k, v in rewards.items()},
        turns=_turns(r),
        n_input_tokens=n_in,
        n_output_tokens=n_out,
        cost_usd=cost,
        timings=_timings(r),
        error_kind=kind,
        error_message=message,
        exception_type=r.exception_info.exception_type if r.exception_info else None,
        trial_dir=spec.trials_dir.resolve() / r.trial_name,
        notes=notes, policy_refused=policy_refused(r.exception_info.exception_message if r.exception_info else None),
    )


def _guard_phases(trial: Trial) -> None:
    """Close the gap between the agent's phase and the verifier's, on envevo's local environment.

    - Separate verifier: the agent's processes end as soon as its phase is over, so the collect hooks and artifact
      copies that follow read a filesystem nothing of the agent's can still change (a daemon rewriting a listing).
      Single-step tasks only: a multi-step task's agent goes on in the same container.
    - Shared verifier: the agent's processes stay (the tests may query what it started), but /logs/verifier is
      made anew, root's and 755, before the tests: a FIFO planted at test-stdout.txt would hang them, a link would
      send their output elsewhere."""
    from harbor.models.task.verifier_mode import VerifierEnvironmentMode, resolve_task_verifier_mode
    from harbor.models.trial.paths import EnvironmentPaths
    from harbor.trial.hooks import TrialEvent

    environment = getattr(trial, "agent_environment", None)
    if not hasattr(environment, "quiesce") or trial.task.config.steps:
        return
    if resolve_task_verifier_mode(trial.task.config) == VerifierEnvironmentMode.SEPARATE:
        unneeded = _logs_unread_after_agent(trial, EnvironmentPaths.for_os(environment.os))  # type: ignore[union-attr]

        async def quiesce(_event) -> None:
            await environment.quiesce(unneeded)  # type: ignore[union-attr]

        trial.add_hook(TrialEvent.AGENT_END, quiesce)
        return

    async def fresh_verifier_dir(_event) -> None:
        with environment.with_default_user(trial.task.config.verifier.user):  # type: ignore[union-attr]
            await environment.empty_dirs([EnvironmentPaths.for_os(environment.os).verifier_dir])  # type: ignore[union-attr]

    trial.add_hook(TrialEvent.VERIFICATION_START, fresh_verifier_dir)


def _logs_unread_after_agent(trial: Trial, paths) -> list[str]:
    """The agent's log dirs that nothing reads in its container after its phase (separate verifier): Harbor copies
    them back in after copying them out, so a collect hook or an artifact could read them there; with neither, the
    copy into the stopped container is skipped."""
    from pathlib import PurePosixPath

    if trial.task.config.verifier.collect:
        return []
    sources = [PurePosixPath(a if isinstance(a, str) else a.source)
               for a in (*trial.task.config.artifacts, *trial.config.artifacts)]
    logs = [PurePosixPath(paths.agent_dir), PurePosixPath(paths.user_agent_dir)]
    return [str(d) for d in logs if not any(s == d or s in d.parents or d in s.parents for s in sources)]


@host_env_guarded
async def run_trial(spec: TrialSpec) -> TrialOutcome:
    """Run one trial to completion. Failures of the task or agent become an ErrorKind, not an exception."""
    try:
        config = trial_config(spec)
        trial = await Trial.create(config)
    except Exception as exc:  # Harbor rejected the config or task before any container started
        import traceback

        _raise_if_bug(type(exc).__name__, str(exc), "".join(traceback.format_exception(exc)),
                      f"setting up a trial of {spec.task_dir.name}")
        return TrialOutcome(
            task=spec.task_dir.name,
            agent=spec.agent,
            model=spec.model,
            subject=spec.subject,
            error_kind=ErrorKind.INFRASTRUCTURE_ERROR,
            error_message=f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
            exception_type=type(exc).__name__, policy_refused=policy_refused(str(exc)),
        )
    _guard_phases(trial)
    try:
        result = await trial.run()
    finally:
        removed = getattr(getattr(trial, "agent_environment", None), "removed", None)
        if removed is not None:  # envevo's local environment removes a quiesced container in the background
            await removed()
    exc_info = result.exception_info
    if exc_info is not None and (result.agent_execution is None or result.agent_execution.started_at is None):
        # Before the agent ran, the code in play is envevo's environment and Harbor's trial loop, not the agent's.
        _raise_if_bug(exc_info.exception_type, exc_info.exception_message, exc_info.exception_traceback,
                      f"a trial of {spec.task_dir.name}")
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        # Harbor 0.26 re-raises a cancel after teardown; should a version return the cancelled trial as a failed
        # result instead, propagate the cancel anyway, so nobody retries or records an interrupted trial.
        raise asyncio.CancelledError
    return to_outcome(spec, result)


TrialRunner = Callable[[TrialSpec], Awaitable[TrialOutcome]]
_trial_runner: TrialRunner | None = None


def set_trial_runner(runner: TrialRunner | None) -> None:
    """Run every trial of the process through `runner` (e.g. one Ray task each); None: here, with run_trial."""
    global _trial_runner
    _trial_runner = runner


async def run_trials(
    specs: Sequence[TrialSpec],
    concurrency: int = 2,
    retries: int = 1,
    on_done: Callable[[int, TrialOutcome], Awaitable[None] | None] | None = None,
    gate: asyncio.Semaphore | None = None,
) -> list[TrialOutcome]:
    """Run trials with at most `concurrency` at once; results come back in the order of `specs`.

    A trial that failed on infrastructure (not the task, not the agent) is re-run up to `retries` times,
    so a flaky sandbox is not counted against the task; a provider pushing back (quota, 429, 5xx, a dropped
    connection) up to the backoff's attempts, each after a jittered exponential wait that every other start of
    the process waits out too. Pass `gate` to share one bound between callers
    (e.g. several lineages evolving at once); `concurrency` is then ignored.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = gate or asyncio.Semaphore(concurrency)
    # Harbor's own compose path rebuilds per trial; a warm cached build makes those builds layer hits.
    caches = {s.env: ImageCache(engine) for s in specs
              if s.env.startswith("harbor:") and (engine := resolve_env(s.env).engine)}

    async def one(i: int, spec: TrialSpec) -> TrialOutcome:
        infra = provider = 0
        while True:
            async with gate:
                if spec.env in caches:
                    await caches[spec.env].warm(spec.task_dir)
                outcome = await (_trial_runner or run_trial)(spec)
            if not outcome.error_kind.is_infrastructure:
                break
            text = outcome.error_message or ""
            kind = outcome.exception_type or text.partition(":")[0]
            if kind != "StartRefused" and is_provider_error(kind, text) and provider < backoff().attempts:
                await provider_wait(provider)
                provider += 1
                continue
            infra += 1
            if infra > retries:
                break
        if on_done is not None:
            maybe = on_done(i, outcome)
            if asyncio.iscoroutine(maybe):
                await maybe
        return outcome

    return list(await asyncio.gather(*(one(i, s) for i, s in enumerate(specs))))
