"""The engine interface: what the generation loop asks of an engine, whatever drives it (LLM or procedural).

The loop owns control flow, budgets, effort and direction checks, verification and storage. An engine only
answers four questions, matching the paper's roles: what is ξ here (extract_trace), how would you change it
(propose, the Proposer), is that plan good (review, the Reviewer), and produce the changed task (modify,
the Modifier). It also names its reference distribution p_T, so every version gets an exact D_T.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from envevo.errors import CandidateFailed, EngineStop
from envevo.task import Task
from envevo.trace import Direction, Effort, ReferenceDistribution, Trace

__all__ = ["CandidateFailed", "CriterionVerdict", "Engine", "EngineStop", "GenerationContext", "Proposal", "Review"]


class GenerationContext(BaseModel):
    """What an engine may know about where it is in a run. `rng` is the generation's own random stream."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    lineage: str
    generation: int
    rng: random.Random = Field(exclude=True)
    workdir: Path = Field(description="a scratch folder of this generation's; engines write candidates here")


class Proposal(BaseModel):
    """A Proposer's output: ξ′ and the evolution plan derived from the diff ξ_E → ξ′."""

    direction: Direction
    effort: Effort
    before: Trace
    after: Trace
    plan: dict[str, Any] = Field(default_factory=dict, description="engine-specific, JSON-serializable")
    summary: str = ""
    error: str | None = Field(None, description="why the engine has no usable plan (a model's answer cut at its "
                                                "output cap, refused, malformed): the loop rejects the plan with it")


class CriterionVerdict(BaseModel):
    """One rubric criterion: the reason first, then the verdict (so judges reason before they decide)."""

    name: str
    reason: str
    verdict: str = Field(description="pass | fail | n/a")


class Review(BaseModel):
    accepted: bool
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    feedback: str = ""


@runtime_checkable
class Engine(Protocol):
    name: str

    def reference(self) -> ReferenceDistribution:
        """p_T used for D_T of every version this engine produces."""
        ...

    async def extract_trace(self, task: Task) -> Trace: ...

    async def propose(
        self, task: Task, trace: Trace, direction: Direction, effort: Effort, feedback: list[str], ctx: GenerationContext
    ) -> Proposal | None:
        """ξ′ and a plan, or None when this direction has no possible edit for this task."""
        ...

    async def review(self, task: Task, proposal: Proposal, ctx: GenerationContext) -> Review: ...

    async def modify(self, task: Task, proposal: Proposal, feedback: list[str], ctx: GenerationContext) -> Task:
        """The candidate task realizing the plan; `feedback` holds the verifiers' reasons from earlier attempts."""
        ...
