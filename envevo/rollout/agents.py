"""Simulated agents as shell drivers (`envevo.rollout.agents:SimulatedDriver`). SIMULATION.

They act in the real sandbox through the shell that runtime's driven agent (`envevo.runtime.DRIVEN_AGENT`, the
Harbor custom agent) hands them. Harbor gives custom agents only the instruction, so the chain comes in through
the driver's options (TrialSpec.agent_kwargs["options"]): `chain` (the task's `[metadata.envevo].chain`),
`profile` (a name or a SimProfile dict) and `seed`. Nothing in envevo.rollout imports Harbor.
"""

from __future__ import annotations

import json
import random

from envevo.rollout._episode import COMMAND_TIMEOUT, batch_script, parse_batch, play
from envevo.rollout._profiles import profile as get_profile
from envevo.runtime import DriverResult, ShellExec


class SimulatedDriver:
    def __init__(self, *, chain: dict | None = None, profile: str | dict = "sim-medium",
                 seed: int = 0, p_step: float | None = None) -> None:
        if chain is None:
            raise ValueError("the simulated agent needs the task's chain (agent kwarg 'chain'); "
                             "it only works on procedural tasks")
        from envevo.catalog import Chain

        self._chain = Chain.model_validate({k: v for k, v in chain.items() if k != "final"})
        prof = get_profile(profile)
        self._profile = prof if p_step is None else prof.model_copy(update={"p_step": p_step})
        self._seed = seed

    async def run(self, instruction: str, exec: ShellExec) -> DriverResult:
        from envevo.catalog import CatalogPrior, build_blocks

        async def run_cmds(commands: list[str]) -> list[tuple[int, str]]:
            try:
                _, output = await exec(batch_script(commands), (COMMAND_TIMEOUT + 10) * len(commands) + 30)
            except RuntimeError as e:  # the environment's exec timeout: the commands failed, the episode goes on
                return [(124, str(e))] * len(commands)
            return parse_batch(output, len(commands))

        rng = random.Random(self._seed)
        episode = await play(self._chain, build_blocks(self._chain), self._profile, CatalogPrior(), rng, run_cmds)
        return DriverResult(metadata={"n_turns": episode.turns, "simulated": True, "profile": self._profile.name},
                            logs={"simulation.json": json.dumps(episode.model_dump(exclude={"passed"}), indent=2)})
