"""Evolution: the engine interface, the two gated loops of a generation, and the lineage runner."""

from envevo.evolve._config import EvolveConfig
from envevo.evolve._engine import (
                                   CandidateFailed,
                                   Capability,
                                   CriterionVerdict,
                                   Engine,
                                   EngineClass,
                                   EngineStop,
                                   GenerationContext,
                                   ModelEngine,
                                   Proposal,
                                   Review,
                                   TargetableEngine,
                                   is_targetable,
                                   uses_models,
)
from envevo.evolve._engines_factory import ENGINES, engine_capabilities, engine_class, engine_names, make_engine, uses_llm
from envevo.evolve._estimators import StoreRuns, corpus_prior, recorded_estimator_names, recorded_run_estimators, run_estimator
from envevo.evolve._events import Event, Stage
from envevo.evolve._executor import EXECUTORS, AsyncioExecutor, Executor, make_executor, scale_out
from envevo.evolve._loop import LineageRunner, direction_order, evolve, run_verifiers
from envevo.evolve._run_settings import RESUME_MAY_CHANGE, open_run, settle_run_config
from envevo.evolve._seed_start import is_skipped, start_lineages

__all__ = [
    "ENGINES",
    "EXECUTORS",
    "RESUME_MAY_CHANGE",
    "AsyncioExecutor",
    "CandidateFailed",
    "Capability",
    "CriterionVerdict",
    "Engine",
    "EngineClass",
    "EngineStop",
    "EvolveConfig",
    "Event",
    "Executor",
    "GenerationContext",
    "LineageRunner",
    "ModelEngine",
    "Proposal",
    "Review",
    "Stage",
    "StoreRuns",
    "TargetableEngine",
    "corpus_prior",
    "direction_order",
    "engine_capabilities",
    "engine_class",
    "engine_names",
    "evolve",
    "is_skipped",
    "is_targetable",
    "make_engine",
    "make_executor",
    "open_run",
    "recorded_estimator_names",
    "recorded_run_estimators",
    "run_estimator",
    "scale_out",
    "settle_run_config",
    "run_verifiers",
    "start_lineages",
    "uses_llm",
    "uses_models",
]
