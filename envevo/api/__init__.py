"""envevo as a library: one entry point per thing the CLI does, each over composed config models whose defaults are
the CLI's (the commands read their option defaults from these models), each async (await it, or `asyncio.run` it
once), each returning a typed result. The CLI builds a config, calls one of these, and prints.

    from envevo import api
    result = asyncio.run(api.verify([Path("tasks/my-task")], api.CheckConfig()))
"""

from envevo.api._audit import AuditResult, audit, harden_preview
from envevo.api._config import CheckConfig, ModelConfig, SandboxConfig, ScaleConfig, VerificationConfig
from envevo.api._evolve import EvolveResult, EvolveRun, LineageSummary, evolve
from envevo.api._export import DEFAULT_REGISTRY, ExportConfig, ExportFormat, export
from envevo.api._harden import HardenRun, harden
from envevo.api._host import (
    Notify,
    Progress,
    budget_stop,
    model_usage,
    no_progress,
    prepare_host,
    project_file,
    quiet,
    verdicts_exit_code,
    verification_model,
    verifiers_for,
)
from envevo.api._rollout import DEFAULT_OUTPUT_CAP, RolloutConfig, RolloutResult, rollout
from envevo.api._seeds import SeedSelection, select_seeds
from envevo.api._verify import Refusal, VerifyResult, refusal, verify

__all__ = [
    "DEFAULT_REGISTRY",
    "ExportConfig",
    "ExportFormat",
    "export",
    "HardenRun",
    "harden",
    "SeedSelection",
    "select_seeds",
    "DEFAULT_OUTPUT_CAP",
    "RolloutConfig",
    "RolloutResult",
    "rollout",
    "AuditResult",
    "audit",
    "harden_preview",
    "CheckConfig",
    "EvolveResult",
    "EvolveRun",
    "LineageSummary",
    "evolve",
    "ModelConfig",
    "Notify",
    "Progress",
    "Refusal",
    "SandboxConfig",
    "ScaleConfig",
    "VerificationConfig",
    "VerifyResult",
    "budget_stop",
    "model_usage",
    "no_progress",
    "prepare_host",
    "project_file",
    "quiet",
    "refusal",
    "verdicts_exit_code",
    "verification_model",
    "verifiers_for",
    "verify",
]
