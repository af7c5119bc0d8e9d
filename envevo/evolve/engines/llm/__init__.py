"""The LLM engine: Proposer, Reviewer and Modifier agents plus the rubric judge, on any model provider.

Plugs into the generation loop as `--engine llm`. Model plumbing (config, retries, budgets, prompts,
rubrics) lives in envevo.llm; this package holds the roles and the Modifier's shell (a sandbox session).
"""

from envevo.evolve.engines.llm._engine import LLMEngine, files_digest, trace_from_metadata
from envevo.evolve.engines.llm._extract import Evidence, ExtractedStep, Extraction, evidence_problems, extract
from envevo.evolve.engines.llm._factory import build_llm_engine, task_rubric
from envevo.evolve.engines.llm._judge import RubricJudge, TaskReview
from envevo.evolve.engines.llm._modify import ModifierDone
from envevo.evolve.engines.llm._prior import LabelPrior, familiar
from envevo.evolve.engines.llm._propose import ComponentChanges, PlanDraft, StepLabel, plan_problems, snap
from envevo.evolve.engines.llm._review import PlanReview
from envevo.evolve.engines.llm._sandbox import CommandResult, ContainerShell, ShellError, ShellFacts, ShellSession
from envevo.evolve.engines.llm._workspace import Workspace

__all__ = [
    "CommandResult",
    "ComponentChanges",
    "ContainerShell",
    "Evidence",
    "ExtractedStep",
    "Extraction",
    "LLMEngine",
    "LabelPrior",
    "ModifierDone",
    "PlanDraft",
    "PlanReview",
    "RubricJudge",
    "ShellError",
    "ShellFacts",
    "ShellSession",
    "StepLabel",
    "TaskReview",
    "Workspace",
    "build_llm_engine",
    "evidence_problems",
    "extract",
    "familiar",
    "files_digest",
    "plan_problems",
    "snap",
    "task_rubric",
    "trace_from_metadata",
]
