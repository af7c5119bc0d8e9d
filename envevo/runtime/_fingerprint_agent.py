"""Harbor's oracle agent with the solution's end state fingerprinted (`TrialSpec.fingerprint`, envevo/runtime/_end_state.py).

It runs the task's solve.sh exactly as Harbor's `oracle` does (it is that class), with one listing of the file system
before and the fingerprint after, each as root through `environment.exec`. The fingerprint is a file in the agent's
log dir, so it leaves the container like every agent log; a failed fingerprint leaves no file and never fails the
trial (the mutation verifier then judges the mutant as before).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from harbor.agents.oracle import OracleAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trial.paths import TrialPaths

from envevo.runtime._end_state import AFTER_SCRIPT, BEFORE_SCRIPT

_TIMEOUT = 300  # seconds for each listing: a sparse giant or a huge tree must not hold the trial forever


class FingerprintOracle(OracleAgent):
    """Created by import path, so Harbor passes none of the oracle's own arguments: the task dir comes as an agent
    kwarg, and the trial's paths are the log dir's parent (Harbor's layout: <trial>/agent)."""

    def __init__(self, logs_dir: Path, task_dir: str, **kwargs: Any) -> None:
        super().__init__(logs_dir=logs_dir, task_dir=Path(task_dir), trial_paths=TrialPaths(Path(logs_dir).parent),
                         **kwargs)

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        listed = await self._script(environment, BEFORE_SCRIPT)
        await super().run(instruction, environment, context)
        if listed:
            await self._script(environment, AFTER_SCRIPT)

    @staticmethod
    async def _script(environment: BaseEnvironment, script: str) -> bool:
        with contextlib.suppress(RuntimeError):  # the exec's timeout: no fingerprint, the trial goes on
            r = await environment.exec(command=script, user="root", timeout_sec=_TIMEOUT)
            return r.return_code == 0
        return False
