"""What one trial produced, in envevo's own terms (no Harbor types cross this boundary)."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from envevo.runtime._engine_dialect import DEFAULT_ENGINE


class ErrorKind(StrEnum):
    """Why a trial did not produce a clean reward. A fixed set, so callers can branch on it."""

    OK = "ok"
    ENVIRONMENT_BUILD_FAILURE = "environment_build_failure"
    AGENT_TIMEOUT = "agent_timeout"
    AGENT_ERROR = "agent_error"
    VERIFIER_ERROR = "verifier_error"
    REWARD_MISSING = "reward_missing"
    INFRASTRUCTURE_ERROR = "infrastructure_error"

    @property
    def is_infrastructure(self) -> bool:
        """Failures that say nothing about the task or the agent; callers retry these."""
        return self is ErrorKind.INFRASTRUCTURE_ERROR


class PhaseTimings(BaseModel):
    """Wall seconds per trial phase; None where the phase never ran."""

    environment_setup: float | None = None
    agent: float | None = None
    verifier: float | None = None
    teardown: float | None = None
    total: float | None = None


class TrialSpec(BaseModel):
    """One trial to run: an agent on a task in an environment."""

    task_dir: Path
    agent: str = Field(description="Harbor agent name (oracle, nop, terminus-2, …) or an import path 'pkg.mod:Class'")
    model: str | None = None
    env: str = Field(default=DEFAULT_ENGINE, description="Harbor environment type, or an import path 'pkg.mod:Class'")
    trials_dir: Path
    trial_name: str | None = None
    subject: str | None = Field(None, description="what the trial tries, as the verifier that planned it names it (an "
                                                  "exploit, a mutant id); copied to its outcome")
    agent_kwargs: dict = Field(default_factory=dict)
    timeout_multiplier: float = 1.0
    fingerprint: bool = Field(False, description="oracle trials only: fingerprint the solution's end state into the "
                                                 "trial's agent/end-state.txt (envevo/runtime/_end_state.py)")


class TrialOutcome(BaseModel):
    task: str
    agent: str
    model: str | None = None
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    turns: int | None = Field(default=None, description="agent turns (episodes), where the agent reports them")
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    timings: PhaseTimings = Field(default_factory=PhaseTimings)
    error_kind: ErrorKind = ErrorKind.OK
    error_message: str | None = None
    exception_type: str | None = Field(default=None, description="the type name of the exception that ended the trial")
    trial_dir: Path | None = None
    subject: str | None = Field(None, description="its spec's subject: the exploit or mutant the trial tried")
    notes: list[str] = Field(default_factory=list, description="what the sandbox changed or dropped, e.g. refused limits")
    policy_refused: str | None = Field(None, description="the environment refused the task's per-phase network policy "
                                                         "(it cannot switch policy between phases), so no trial ran: "
                                                         "the phases' modes, e.g. 'public setup, no-network agent or "
                                                         "verifier'")

    @property
    def passed(self) -> bool:
        return self.error_kind is ErrorKind.OK and self.reward is not None and self.reward >= 1.0


# Harbor's ValueError when an environment cannot switch network policy between phases (setup online, agent offline):
# read where Harbor's errors become envevo's types (_trial.py), into TrialOutcome.policy_refused.
_POLICY_REFUSED = re.compile(r"network policy differs from (?:a|the) broader|cannot change network policy after start")
_POLICY_MODES = re.compile(r"Execution mode: '([\w-]+)'; broadest mode: '([\w-]+)'")


def policy_refused(message: str | None) -> str | None:
    """The phases' modes of a per-phase network policy Harbor refused to run (its message), else None."""
    if not message or not _POLICY_REFUSED.search(message):
        return None
    modes = _POLICY_MODES.search(message)
    return f"{modes[2]} setup, {modes[1]} agent or verifier" if modes else "its phases"
