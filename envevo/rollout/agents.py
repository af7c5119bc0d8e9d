"""Simulated agents as Harbor custom agents (`envevo.rollout.agents:SimulatedAgent`). SIMULATION.

They act in the real sandbox through `environment.exec`. Harbor gives custom agents only the instruction,
so the chain comes in through agent kwargs (TrialSpec.agent_kwargs), which Harbor forwards here:
`chain` (the task's `[metadata.envevo].chain`), `profile` (a name or a SimProfile dict) and `seed`.
This module imports Harbor because Harbor imports it; nothing else in envevo.rollout does.
"""

from __future__ import annotations

import json
import random
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from envevo.rollout._episode import COMMAND_TIMEOUT, batch_script, parse_batch, play
from envevo.rollout._profiles import profile as get_profile


class SimulatedAgent(BaseAgent):
    def __init__(self, *args: Any, chain: dict | None = None, profile: str | dict = "sim-medium",
                 seed: int = 0, p_step: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if chain is None:
            raise ValueError("the simulated agent needs the task's chain (agent kwarg 'chain'); "
                             "it only works on procedural tasks")
        from envevo.evolve.engines.procedural import Chain

        self._chain = Chain.model_validate({k: v for k, v in chain.items() if k != "final"})
        prof = get_profile(profile)
        self._profile = prof if p_step is None else prof.model_copy(update={"p_step": p_step})
        self._seed = seed

    @staticmethod
    def name() -> str:
        return "envevo-simulated"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        from envevo.evolve.engines.procedural import CatalogPrior, build_blocks

        async def run_cmds(commands: list[str]) -> list[tuple[int, str]]:
            try:
                r = await environment.exec(command=batch_script(commands),
                                           timeout_sec=(COMMAND_TIMEOUT + 10) * len(commands) + 30)
            except RuntimeError as e:  # Harbor's exec timeout: the commands failed, the episode goes on
                return [(124, str(e))] * len(commands)
            return parse_batch((r.stdout or "") + (r.stderr or ""), len(commands))

        rng = random.Random(self._seed)
        episode = await play(self._chain, build_blocks(self._chain), self._profile, CatalogPrior(), rng, run_cmds)
        context.metadata = {"n_turns": episode.turns, "simulated": True, "profile": self._profile.name}
        context.n_input_tokens = context.n_output_tokens = 0
        context.cost_usd = 0.0
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        (self.logs_dir / "simulation.json").write_text(json.dumps(episode.model_dump(), indent=2))
