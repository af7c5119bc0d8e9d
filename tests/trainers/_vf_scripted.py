"""A scripted agent for verifiers 0.4 rollouts: the seat's program is a fixed shell script, run by `bash -c` in the box
verifiers provisioned for the task; no model is called.

verifiers allows this: "a harness may run its loop in-process instead of launching a program" (`Harness.launch`). It
resolves a harness by plugin id, which must be a top-level module that exports exactly one Harness subclass in
`__all__`. A test therefore registers this module in `sys.modules` under `HARNESS_ID`. Import it only where verifiers
is installed (.venv-taskset).
"""

from __future__ import annotations

from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.harness import Harness
from verifiers.v1.runtimes import ProgramResult

HARNESS_ID = "envevo_scripted_agent"


class ScriptedAgentConfig(HarnessConfig):
    script: str = ""
    """What the agent does: one bash script, run in the task's workdir. Empty: nothing."""


class ScriptedAgent(Harness[ScriptedAgentConfig]):
    """The script's exit status is the program's: a nonzero exit fails the rollout (a HarnessError on the trace)."""

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_) -> ProgramResult:
        if not self.config.script:
            return ProgramResult(0, "", "")
        return await runtime.run(["bash", "-c", self.config.script], {})


__all__ = ["ScriptedAgent"]
