"""LLM plumbing shared by the LLM engine's roles: model config, guarded models (retries, concurrency, budgets,
usage), preflight, versioned prompts, rubrics, the Modifier's shell (a sandbox session), and human review.

Only this package and envevo.evolve.engines.llm import pydantic-ai.
"""

from envevo.llm._config import CONFIG_FILE, ROLES, LLMSettings, ModelSpec, Price, Role, RoleSettings, load_settings, parse_model
from envevo.llm._errors import (
    BudgetExceeded,
    CandidateFailed,
    EndpointUnavailable,
    EngineStop,
    ExtractionFailed,
    LLMConfigError,
    RoleFailed,
)
from envevo.llm._guard import EndpointGates, GuardedModel, RetryPolicy
from envevo.llm._human import (
    PROJECT_RUBRIC,
    REVIEWS_FILE,
    HumanReview,
    ProposedCriterion,
    latest_verdicts,
    learn_criteria,
    record_review,
    resolve_version,
    reviews,
)
from envevo.llm._loops import PerLoop
from envevo.llm._meter import Meter, Scope, UsageRecord
from envevo.llm._prompts import PROMPT_NAMES, Prompt, load_prompt, prompt_versions
from envevo.llm._render import render_task, render_trace
from envevo.llm._rubric import (
    Criterion,
    Judgement,
    Rubric,
    append_criteria,
    check_judgements,
    default_rubric,
    load_rubric,
    score,
)
from envevo.llm._runtime import LLMRuntime
from envevo.llm._sandbox import CommandResult, ContainerShell, ShellError, ShellFacts, ShellSession
from envevo.llm._store import attach_store

__all__ = [
    "CONFIG_FILE",
    "PROJECT_RUBRIC",
    "PROMPT_NAMES",
    "REVIEWS_FILE",
    "ROLES",
    "BudgetExceeded",
    "CandidateFailed",
    "CommandResult",
    "ContainerShell",
    "Criterion",
    "EndpointGates",
    "EndpointUnavailable",
    "EngineStop",
    "ExtractionFailed",
    "GuardedModel",
    "HumanReview",
    "Judgement",
    "LLMConfigError",
    "LLMRuntime",
    "LLMSettings",
    "Meter",
    "PerLoop",
    "ModelSpec",
    "Price",
    "Prompt",
    "ProposedCriterion",
    "RetryPolicy",
    "Role",
    "RoleFailed",
    "RoleSettings",
    "Rubric",
    "Scope",
    "ShellError",
    "ShellFacts",
    "ShellSession",
    "UsageRecord",
    "append_criteria",
    "attach_store",
    "check_judgements",
    "default_rubric",
    "latest_verdicts",
    "learn_criteria",
    "load_prompt",
    "load_rubric",
    "load_settings",
    "parse_model",
    "prompt_versions",
    "record_review",
    "render_task",
    "render_trace",
    "resolve_version",
    "reviews",
    "score",
]
