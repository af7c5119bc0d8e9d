"""The engine interface: what the generation loop asks of an engine, whatever drives it (LLM or procedural).

The loop owns control flow, budgets, effort and direction checks, verification and storage. An engine only
answers four questions, matching the paper's roles: what is ξ here (extract_trace), how would you change it
(propose, the Proposer), is that plan good (review, the Reviewer), and produce the changed task (modify,
the Modifier). It also names its reference distribution p_T, so every version gets an exact D_T.

Beyond the loop, an engine declares what else it offers as `capabilities`, and the CLI asks those, never an engine's
name: a model-driven engine (USES_LLM) is a ModelEngine the CLI preflights and meters; one that can be steered
toward an agent's weakness (WEAKNESS_TARGET) is a TargetableEngine; one whose ξ needs no model
(OFFLINE_EXTRACTION) lets the CLI refuse unreadable seeds before a run starts. The registry (_engines_factory.py)
holds engine classes, so capabilities are known before an engine is built (an LLM engine needs settings first).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeGuard, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from envevo.errors import CandidateFailed, EngineStop
from envevo.task import Task
from envevo.trace import Direction, Effort, ReferenceDistribution, Trace

if TYPE_CHECKING:
    from envevo.evolve.engines.procedural import WeaknessTarget
    from envevo.llm import LLMRuntime, LLMSettings
    from envevo.store import LineageStore
    from envevo.verify import TaskVerifier

__all__ = [
    "CandidateFailed",
    "Capability",
    "CriterionVerdict",
    "Engine",
    "EngineClass",
    "EngineStop",
    "GenerationContext",
    "ModelEngine",
    "Proposal",
    "Review",
    "TargetableEngine",
    "is_targetable",
    "uses_models",
]


class Capability(StrEnum):
    """What an engine offers beyond the loop's methods; the CLI keeps to these."""

    USES_LLM = "uses_llm"  # built from LLMSettings; a ModelEngine (model options, preflight, metered store)
    WEAKNESS_TARGET = "weakness_target"  # a TargetableEngine: `--target-weakness` steers it
    OFFLINE_EXTRACTION = "offline_extraction"  # extract_trace needs no model: seeds are checked before a run


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
    # Empty by default: an engine class that subclasses Engine offers nothing beyond the loop until it says so.
    capabilities: ClassVar[frozenset[Capability]] = frozenset()

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


class ModelEngine(Engine, Protocol):
    """An engine with Capability.USES_LLM: its roles call models through `runtime`."""

    runtime: LLMRuntime

    async def preflight(self) -> None:
        """A missing key or a dead endpoint as one clear error, before any work."""
        ...

    def attach_store(self, store: LineageStore) -> None:
        """Record usage in the run's store, and start budgets from what it already recorded."""
        ...


class TargetableEngine(Engine, Protocol):
    """An engine with Capability.WEAKNESS_TARGET: among admissible edits it prefers those that raise `target`'s δ_θ."""

    target: WeaknessTarget | None


class EngineClass(Protocol):
    """What the registry holds: an engine class, its capabilities readable before one is built."""

    capabilities: frozenset[Capability]

    def build(self, settings: LLMSettings | None, *, env: str,
              rubric_files: Sequence[Path]) -> tuple[Engine, Sequence[TaskVerifier]]:
        """The engine and its rubric-slot checks."""
        ...


def uses_models(engine: Engine) -> TypeGuard[ModelEngine]:
    return Capability.USES_LLM in engine.capabilities


def is_targetable(engine: Engine) -> TypeGuard[TargetableEngine]:
    return Capability.WEAKNESS_TARGET in engine.capabilities
