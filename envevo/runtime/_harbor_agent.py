"""The shape every envevo agent shares on Harbor's side: no install step, a fixed version, a name of its own."""

from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment


class EnvevoAgent(BaseAgent):
    """A Harbor agent that needs nothing installed in the sandbox; subclasses give `name()` and `run()`."""

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return
