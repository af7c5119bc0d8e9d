"""The Harbor side of driven agents (see envevo/runtime/_agents.py): the only module of them that imports Harbor."""

from __future__ import annotations

from typing import Any

from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from envevo.runtime._agents import load_driver
from envevo.runtime._harbor_agent import EnvevoAgent


class DrivenAgent(EnvevoAgent):
    def __init__(self, *args: Any, driver: str | None = None, options: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not driver:
            raise ValueError("the driven agent needs a driver (agent kwarg 'driver', as module:Class)")
        self._driver = load_driver(driver, dict(options or {}))  # a bad option fails here, before the sandbox

    @staticmethod
    def name() -> str:
        return "envevo-driven"

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        async def exec_(command: str, timeout_sec: int) -> tuple[int, str]:
            r = await environment.exec(command=command, timeout_sec=timeout_sec)
            return r.return_code, (r.stdout or "") + (r.stderr or "")

        result = await self._driver.run(instruction, exec_)
        context.metadata = dict(result.metadata)
        context.n_input_tokens = context.n_output_tokens = 0
        context.cost_usd = 0.0
        for name, text in result.logs.items():
            self._write_log(name, text)
