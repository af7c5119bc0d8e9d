"""The one place that talks to Harbor: run trials (agent × task × environment) and report outcomes."""

from envevo.runtime._cleanup import list_containers, remove_containers, sweep_orphans
from envevo.runtime._outcome import ErrorKind, PhaseTimings, TrialOutcome, TrialSpec
from envevo.runtime._trial import run_trial, run_trials

__all__ = [
    "ErrorKind",
    "PhaseTimings",
    "TrialOutcome",
    "TrialSpec",
    "list_containers",
    "remove_containers",
    "run_trial",
    "run_trials",
    "sweep_orphans",
]
