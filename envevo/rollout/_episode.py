"""One simulated episode on a procedural chain: look around, act, self-check, maybe retry — every command a turn.

SIMULATION. The agent does not read the tests. Per step it draws whether it applies the skill right
(the block's oracle snippet) or wrong (its wrong variant), runs that in the real sandbox, and checks
what any agent could: the command succeeded and the step's output file exists and is non-empty. A
failed check, or a wrong draw it notices (with the profile's `notice` chance), earns a fresh draw.
"""

from __future__ import annotations

import base64
import random
import shlex
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, Field

from envevo.rollout._profiles import SimProfile, explore_turns, step_probability

# run(command) -> (return code, output); the agent side of `environment.exec`.
Exec = Callable[[str], Awaitable[tuple[int, str]]]

PRELUDE = "set -u\nexport LC_ALL=C\ncd /app\nmkdir -p /app/work /app/output\n"


class StepLog(BaseModel):
    index: int
    scenario: str
    skill: str
    p: float
    attempts: list[str] = Field(default_factory=list, description="'oracle' or 'wrong' per attempt")
    self_check: list[bool] = Field(default_factory=list)


class Episode(BaseModel):
    simulated: bool = True
    profile: str
    turns: int = 0
    steps: list[StepLog] = Field(default_factory=list)


def shell(script: str) -> str:
    """A command that runs `script` with bash, immune to quoting (the snippets hold quotes and heredocs)."""
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | bash"


def _look_commands(block) -> list[str]:
    paths = [block.in_path] if block.in_path else []
    paths += [op["path"] for op in block.fixtures if isinstance(op.get("path"), str)]
    cmds = ["ls -la /app /app/work 2>/dev/null | head -n 40"]
    for p in dict.fromkeys(paths):
        q = shlex.quote(p)
        cmds += [f"head -n 20 {q} 2>/dev/null || ls -la {q}", f"wc -l {q} 2>/dev/null"]
    return cmds


async def play(chain, blocks, prof: SimProfile, prior, rng: random.Random, run: Exec) -> Episode:
    ep = Episode(profile=prof.name)

    async def turn(cmd: str) -> tuple[int, str]:
        ep.turns += 1
        return await run(cmd)

    for step, block in zip(chain.steps, blocks):
        p = step_probability(prof, prior, step.scenario, step.skill, chain.goal)
        log = StepLog(index=block.index, scenario=step.scenario, skill=step.skill, p=round(p, 4))
        looks = _look_commands(block)
        for i in range(explore_turns(prof, prior, step.scenario, step.skill, chain.goal)):
            await turn(looks[i % len(looks)])
        for _attempt in range(prof.retries + 1):
            right = rng.random() < p
            log.attempts.append("oracle" if right else "wrong")
            rc, _ = await turn(shell(PRELUDE + "(\n" + (block.oracle_sh if right else block.wrong_sh) + "\n)\n"))
            rc_check, _ = await turn(f"test -s {shlex.quote(block.out_path)}")
            ok = rc == 0 and rc_check == 0
            log.self_check.append(ok)
            if ok and (right or rng.random() >= prof.notice):
                break
        ep.steps.append(log)
    return ep
