"""Rows of the lineage store, as typed models."""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from envevo.errors import UserError
from envevo.task import Task
from envevo.trace import Difficulty, Direction, Drift, Effort, Trace
from envevo.verify import Finding


class StoreError(UserError):
    """The store cannot do what was asked: missing or foreign run dir, conflicting write, newer schema."""


class LineageStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"  # reached the requested number of generations
    TERMINATED = "terminated"  # every direction failed in some generation
    BUDGET_EXHAUSTED = "budget_exhausted"  # a run-wide budget (tokens, cost, time) ran out


class TryStatus(StrEnum):
    """One try at producing a generation of a lineage. Plans and candidates hang off a try."""

    OPEN = "open"  # in flight (or the process died: then a later try marks it abandoned)
    COMMITTED = "committed"  # its version was committed
    ABANDONED = "abandoned"  # superseded by a later try of the same generation (the earlier process died)
    FAILED = "failed"  # the lineage ended in this generation without a version


class Lineage(BaseModel):
    id: str = Field(description="slug of the seed name, unique in the run; used in export names")
    seed_name: str
    seed_hash: str
    status: LineageStatus
    reason: str | None = None
    created_at: str
    updated_at: str
    latest_generation: int = Field(description="the highest committed generation (0: only the seed)")


class Version(BaseModel):
    """A committed generation of a lineage. Generation 0 is the seed."""

    id: int
    lineage_id: str
    generation: int
    task_hash: str
    parent_hash: str | None = None
    direction: str | None = None
    effort: str | None = None
    trace: Trace | None = None
    difficulty: Difficulty | None = None
    mutated: list[str] = Field(default_factory=list, description="components changed from the parent")
    verified: bool = False
    candidate_id: int | None = None
    created_at: str
    drift: Drift | None = Field(None, description="similarity of goal and instruction to the seed's and the parent's")

    @property
    def L(self) -> int | None:  # noqa: N802 - the paper's name
        if self.difficulty is not None:
            return self.difficulty.L
        return self.trace.L if self.trace is not None else None

    @property
    def D_T(self) -> float | None:  # noqa: N802
        return self.difficulty.D_T if self.difficulty is not None else None


class VersionCommit(BaseModel):
    """An evolved generation to commit (`LineageStore.commit`): the version row's inputs, checked there."""

    lineage_id: str
    generation: int
    task: Task
    direction: Direction | str  # checked at the commit, with the store's own message
    effort: Effort | str
    trace: Trace | None = None
    difficulty: Difficulty | None = None
    mutated: tuple[str, ...] | None = Field(None, description="components changed from the parent; None: diff them")
    verified: bool
    parent_hash: str | None = Field(None, description="None: the lineage's generation - 1, from the store")
    candidate_id: int | None = None
    drift: Drift | None = Field(None, description="None: not measured (the encoder is missing); `envevo analyze drift` later")


class GenerationTry(BaseModel):
    id: int
    lineage_id: str
    generation: int
    status: TryStatus
    pid: int
    started_at: str
    finished_at: str | None = None


class Attempt(BaseModel):
    """What plans and candidates share: the round of a generation try they belong to."""

    id: int
    try_id: int
    lineage_id: str
    generation: int
    direction: str
    attempt: int


class Plan(Attempt):
    proposal: dict[str, Any] | None = Field(default=None, description="Proposal as JSON (None: no edit possible)")
    review: dict[str, Any] | None = Field(default=None, description="Review as JSON")
    accepted: bool
    feedback: str | None = None
    created_at: str


class Candidate(Attempt):
    plan_id: int | None = None
    task_hash: str | None = Field(default=None, description="None when the Modifier produced no task")
    accepted: bool
    reasons: list[str] = Field(default_factory=list)
    created_at: str


class Verification(BaseModel):
    id: int
    candidate_id: int
    verifier: str
    passed: bool
    inconclusive: bool = Field(default=False, description="no evidence either way; never a pass, not the task's fault")
    reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="what is no finding against the task (an exploit skipped)")
    metrics: dict[str, Any] = Field(default_factory=dict, description="figures measured beside the verdict (mutation score)")
    findings: list[Finding] = Field(default_factory=list, description="the reasons, typed ([] in rows from before them)")
    runs: list[dict[str, Any]] = Field(default_factory=list, description="per-run TrialOutcome as JSON")
    wall_seconds: float | None = None
    created_at: str


def _text(value: object) -> object:
    """A path or an enum as the text the row stores (a str-valued enum by its value)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value) if isinstance(value, StrEnum) else value


class NewRollout(BaseModel):
    """A rollout to record (`LineageStore.add_rollout`): rollout `k` of `agent`/`model` on a task version."""

    task_hash: str
    agent: str
    k: int = Field(description="index of this rollout among the k run for (task, agent, model)")
    model: str | None = None
    reward: float | None = None
    turns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    duration_s: float | None = None
    error_kind: Annotated[str | None, BeforeValidator(_text)] = None
    simulated: bool = False
    trial_dir: Annotated[str | None, BeforeValidator(_text)] = None


class Rollout(NewRollout):
    """A stored rollout: what was recorded, with its row id and time."""

    id: int
    created_at: str

    @property
    def passed(self) -> bool:
        return self.error_kind in (None, "ok") and self.reward is not None and self.reward >= 1.0


class Usage(BaseModel):
    id: int
    lineage_id: str | None = None
    generation: int | None = None
    role: str = Field(description="proposer | reviewer | modifier | judge | rollout | …")
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    estimated: bool = Field(False, description="tokens estimated from what arrived, not reported by the server")
    created_at: str


class UsageTotal(BaseModel):
    role: str
    model: str | None = None
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None
    estimated_calls: int = Field(0, description="calls whose tokens were estimated (an answer abandoned mid-stream)")
