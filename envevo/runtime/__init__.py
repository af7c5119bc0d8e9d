"""The one place that talks to Harbor: run trials (agent × task × environment) and report outcomes.

Harbor is imported only when a trial runs (`run_trial`, `run_trials`), so modules that merely use the
outcome types (verdicts, the store, the trainer adapters' environments) load without it.
"""

from envevo.runtime._cleanup import list_containers, remove_containers, sweep_orphans
from envevo.runtime._envs import LOCAL_ENGINES, EnvChoice, check_env, resolve_env
from envevo.runtime._image_cache import CACHE_LABEL, CACHE_REPO, cache_tag, environment_digest
from envevo.runtime._session import SandboxSession, SessionError, SessionResult, open_session
from envevo.runtime._outcome import ErrorKind, PhaseTimings, TrialOutcome, TrialSpec

__all__ = [
    "CACHE_LABEL",
    "CACHE_REPO",
    "EnvChoice",
    "LOCAL_ENGINES",
    "cache_tag",
    "check_env",
    "resolve_env",
    "ErrorKind",
    "PhaseTimings",
    "SandboxSession",
    "SessionError",
    "SessionResult",
    "TrialOutcome",
    "open_session",
    "TrialSpec",
    "environment_digest",
    "list_containers",
    "remove_containers",
    "run_trial",
    "run_trials",
    "sweep_orphans",
]


def __getattr__(name: str):
    if name in ("run_trial", "run_trials"):
        from envevo.runtime import _trial

        return getattr(_trial, name)
    raise AttributeError(f"module 'envevo.runtime' has no attribute {name!r}")
