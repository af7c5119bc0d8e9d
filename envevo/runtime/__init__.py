"""The one place that talks to Harbor: run trials (agent × task × environment) and report outcomes.

Harbor is imported only when a trial runs (`run_trial`, `run_trials`), so modules that merely use the
outcome types (verdicts, the store, the trainer adapters' environments) load without it.
"""

from envevo.runtime import _host_ca as host_ca  # the module: trust settings for the host's CA bundle
from envevo.runtime._agents import (
    DRIVEN_AGENT,
    NOP_AGENT,
    ORACLE_AGENT,
    OUTPUT_CAP_KWARGS,
    SCRIPTED_AGENT,
    DriverResult,
    ShellDriver,
    ShellExec,
    with_output_cap,
)
from envevo.runtime._bwrap_sandbox import bwrap_probe
from envevo.runtime._cert_failure import cert_failure, cert_failure_line
from envevo.runtime._cleanup import list_containers, owner_id, remove_containers, sweep_orphans
from envevo.runtime._end_state import END_STATE
from envevo.runtime._engine_dialect import (
    BACKENDS,
    BWRAP,
    DEFAULT_ENGINE,
    DIALECTS,
    DOCKER,
    LOCAL_ENGINES,
    PODMAN,
    EngineDialect,
    SandboxBackend,
    dialect_of,
)
from envevo.runtime._envs import EnvChoice, check_env, resolve_env
from envevo.runtime._host_ca import ENV_VAR as HOST_CA_ENV_VAR
from envevo.runtime._host_ca import volume_args as host_ca_volume_args
from envevo.runtime._image_cache import CACHE_LABEL, CACHE_REPO, STANDIN_LINE, cache_tag, environment_digest
from envevo.runtime._live_trial import LiveTrial, LiveTrialError
from envevo.runtime._network import network_policy
from envevo.runtime._outcome import ErrorKind, PhaseTimings, TrialOutcome, TrialSpec
from envevo.runtime._publish import PublishedImage, PublishError, publish_image
from envevo.runtime._quota import Backoff, Limiter, LocalLimiter, is_provider_error, quota_settings, set_limiter, set_quota
from envevo.runtime._schema import SchemaCheck, SchemaProblem, harbor_schema
from envevo.runtime._session import SandboxSession, SessionError, SessionResult, open_session

__all__ = [
    "Backoff",
    "Limiter",
    "LocalLimiter",
    "is_provider_error",
    "quota_settings",
    "set_limiter",
    "set_quota",
    "CACHE_LABEL",
    "CACHE_REPO",
    "STANDIN_LINE",
    "DRIVEN_AGENT",
    "OUTPUT_CAP_KWARGS",
    "NOP_AGENT",
    "ORACLE_AGENT",
    "SCRIPTED_AGENT",
    "DriverResult",
    "END_STATE",
    "EnvChoice",
    "HOST_CA_ENV_VAR",
    "LOCAL_ENGINES",
    "BACKENDS",
    "BWRAP",
    "SandboxBackend",
    "bwrap_probe",
    "release_image_roots",
    "DEFAULT_ENGINE",
    "DIALECTS",
    "DOCKER",
    "PODMAN",
    "EngineDialect",
    "dialect_of",
    "cache_tag",
    "cert_failure",
    "cert_failure_line",
    "check_agent",
    "check_env",
    "resolve_env",
    "ErrorKind",
    "PhaseTimings",
    "PublishError",
    "PublishedImage",
    "publish_image",
    "SandboxSession",
    "SchemaCheck",
    "SchemaProblem",
    "harbor_schema",
    "SessionError",
    "SessionResult",
    "ShellDriver",
    "ShellExec",
    "with_output_cap",
    "TrialOutcome",
    "open_session",
    "TrialSpec",
    "environment_digest",
    "host_ca",
    "host_ca_volume_args",
    "list_containers",
    "LiveTrial",
    "LiveTrialError",
    "network_policy",
    "owner_id",
    "remove_containers",
    "run_trial",
    "run_trials",
    "set_trial_runner",
    "sweep_orphans",
]


def __getattr__(name: str):
    if name in ("check_agent", "run_trial", "run_trials", "set_trial_runner"):  # they import Harbor
        from envevo.runtime import _trial

        return getattr(_trial, name)
    if name == "release_image_roots":  # the bwrap backend imports Harbor too
        from envevo.runtime import _bwrap_env

        return _bwrap_env.release_image_roots
    raise AttributeError(f"module 'envevo.runtime' has no attribute {name!r}")

