"""Evolution: the engine interface, the two gated loops of a generation, and the lineage runner."""

from envevo.evolve._config import EvolveConfig
from envevo.evolve._engine import CandidateFailed, CriterionVerdict, Engine, EngineStop, GenerationContext, Proposal, Review
from envevo.evolve._executor import AsyncioExecutor, Executor
from envevo.evolve._loop import Event, LineageRunner, direction_order, evolve, start_lineages

__all__ = [
    "AsyncioExecutor",
    "CandidateFailed",
    "CriterionVerdict",
    "Engine",
    "EngineStop",
    "EvolveConfig",
    "Event",
    "Executor",
    "GenerationContext",
    "LineageRunner",
    "Proposal",
    "Review",
    "direction_order",
    "evolve",
    "start_lineages",
]
