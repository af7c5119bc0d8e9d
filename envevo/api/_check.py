"""What `verify`, `audit` and `seeds select` share: before the first trial, the model the verifiers may call (checked),
the host prepared (host variables, sandbox preflight, quotas), the image map and the verifiers; after, the model's
usage and whether its cap stopped it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo.api._config import CheckConfig, SandboxConfig
from envevo.api._host import Notify, budget_stop, model_usage, prepare_host, verification_model, verifiers_for
from envevo.verify import TrialVerifier, VerificationConfig

if TYPE_CHECKING:
    from envevo.llm import LLMRuntime
    from envevo.task import ImageMap, Task


@dataclass
class Checking:
    """A command that verifies tasks, ready to run its first trial."""

    sandbox: SandboxConfig
    verification: VerificationConfig
    runtime: LLMRuntime | None  # the model lent to the verifiers that call one (None: none asked)
    mapping: ImageMap
    verifiers: list[TrialVerifier]

    @classmethod
    async def open(cls, config: CheckConfig, notify: Notify, *, preflight: bool = True) -> Checking:
        """Check the model and prepare the host; raises UserError, before any container, for what a user can fix."""
        runtime = await verification_model(config.model, config.verification)
        mapping, _ = prepare_host(config.sandbox, config.scale, notify, preflight=preflight)
        return cls(config.sandbox, config.verification, runtime, mapping, verifiers_for(config.verification, runtime))

    def runnable(self, task: Task, dest_root: Path) -> tuple[Path, list[str]]:
        """The dir `task`'s trials run from (a converted copy under `dest_root` where needed), and what changed."""
        from envevo.sandbox import runnable_copy

        return runnable_copy(task, self.sandbox.env, self.mapping, dest_root)

    @property
    def usage(self) -> list[dict[str, Any]]:
        """Calls, tokens and cost per role and model of what the verifiers asked the model."""
        return model_usage(self.runtime)

    @property
    def budget_stop(self) -> str | None:
        """The line saying the command's cap stopped the model, or None."""
        return budget_stop(self.runtime)
