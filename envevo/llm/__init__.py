"""LLM plumbing shared by the LLM engine's roles: model config, guarded models (retries, concurrency, budgets,
usage), preflight, versioned prompts, rubrics, human review, and the llm p_T estimator.

Only this package and envevo.evolve.engines.llm import pydantic-ai.
"""

from envevo.llm._config import CONFIG_FILE, ROLES, LLMSettings, ModelSpec, Price, Role, RoleSettings, load_settings, parse_model
from envevo.llm._errors import (
    BudgetExceeded,
    CandidateFailed,
    EndpointDown,
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
from envevo.llm._meter import Meter, Scope, Tally, UsageRecord, usage_rows
from envevo.llm._model_grammar import litellm_model, normalize_model
from envevo.llm._overrides import parse_role_models, settings_with_options
from envevo.llm._per_loop import PerLoop
from envevo.llm._preflight import preflight
from envevo.llm._prompts import PROMPT_NAMES, Prompt, load_prompt, prompt_versions
from envevo.llm._reasons import cut_replies, role_failure
from envevo.llm._reference_prior import LLMPrior
from envevo.llm._render import render_task, render_trace
from envevo.llm._rubric import (
    Criterion,
    Judgement,
    Rubric,
    append_criteria,
    check_judgements,
    default_rubric,
    judge_every_criterion,
    load_rubric,
    score,
)
from envevo.llm._runtime import LLMRuntime
from envevo.llm._usage_sink import attach_store

__all__ = [
    "LLMHacker",
    "CONFIG_FILE",
    "PROJECT_RUBRIC",
    "PROMPT_NAMES",
    "REVIEWS_FILE",
    "ROLES",
    "BudgetExceeded",
    "CandidateFailed",
    "Criterion",
    "EndpointDown",
    "EndpointGates",
    "EndpointUnavailable",
    "EngineStop",
    "ExtractionFailed",
    "GuardedModel",
    "HumanReview",
    "Judgement",
    "LLMConfigError",
    "LLMPrior",
    "LLMRuntime",
    "LLMSettings",
    "Meter",
    "ModelMutantWriter",
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
    "Tally",
    "UsageRecord",
    "usage_rows",
    "append_criteria",
    "attach_store",
    "check_judgements",
    "judge_every_criterion",
    "cut_replies",
    "default_rubric",
    "latest_verdicts",
    "learn_criteria",
    "load_prompt",
    "load_rubric",
    "litellm_model",
    "load_settings",
    "normalize_model",
    "parse_role_models",
    "settings_with_options",
    "parse_model",
    "preflight",
    "prompt_versions",
    "record_review",
    "render_task",
    "render_trace",
    "resolve_version",
    "reviews",
    "role_failure",
    "score",
    "verifiers_with_model",
]


def __getattr__(name: str):
    # The LLM hacker drives a sandbox (verify, runtime): loaded only when the red team asks for it, so that
    # `import envevo.llm` stays model plumbing.
    if name == "LLMHacker":
        from envevo.llm._hacker import LLMHacker

        return LLMHacker
    if name == "ModelMutantWriter":  # likewise: its answers are the mutation verifier's (envevo.verify)
        from envevo.llm._mutant_writer import ModelMutantWriter

        return ModelMutantWriter
    if name == "verifiers_with_model":  # likewise
        from envevo.llm._verifiers import verifiers_with_model

        return verifiers_with_model
    raise AttributeError(f"module 'envevo.llm' has no attribute {name!r}")
