"""A Harbor custom agent that runs one shell script as root in the sandbox (`envevo.runtime._scripted_agent:ScriptedAgent`).

The red team's exploit agents are scripts built from the task (`envevo.verify.exploits`); this is the one agent
that carries them into the sandbox, so envevo.verify never imports Harbor. Agent kwargs (TrialSpec.agent_kwargs):
`script` (the shell text, run by bash -c), `label` (a name for the logs) and `timeout_sec`. The script's output
and exit code are written to the trial's agent/ log dir as `script.log` and `script.json`; a failing script is not
an agent error (an exploit tries everything and keeps going), so the verifier always runs.
"""

from __future__ import annotations

import json
from typing import Any

from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from envevo.runtime._harbor_agent import EnvevoAgent

SCRIPT_LOG = "script.log"
SCRIPT_RESULT = "script.json"


class ScriptedAgent(EnvevoAgent):
    def __init__(self, *args: Any, script: str | None = None, label: str = "script", timeout_sec: int = 300,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not script:
            raise ValueError("the scripted agent needs a shell script (agent kwarg 'script')")
        self._script = script
        self._label = label
        self._timeout = int(timeout_sec)

    @staticmethod
    def name() -> str:
        return "envevo-scripted"

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        try:
            r = await environment.exec(command=self._script, user="root", timeout_sec=self._timeout)
            code, text = r.return_code, (r.stdout or "") + (r.stderr or "")
        except RuntimeError as e:  # the environment's exec timeout
            code, text = 124, str(e)
        self._write_log(SCRIPT_LOG, text)
        self._write_log(SCRIPT_RESULT, json.dumps({"label": self._label, "return_code": code}))
        context.metadata = {"n_turns": 1, "scripted": self._label, "return_code": code}
        context.n_input_tokens = context.n_output_tokens = 0
        context.cost_usd = 0.0
