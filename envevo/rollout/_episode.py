"""One simulated episode on a procedural chain: look around, act, self-check, maybe retry — every command a turn.

SIMULATION. The agent does not read the tests. Per step it draws whether it applies the skill right
(the block's oracle snippet) or wrong (its wrong variant), runs that in the real sandbox, and checks
what any agent could: the command succeeded and the step's output file exists and is non-empty. A
failed check, or a wrong draw it notices (with the profile's `notice` chance), earns a fresh draw.

Before a step's first attempt the agent backs up /app, and before each retry it restores that backup, as an
agent undoing its mistake would. Without the undo a retry ran on what the wrong attempt left behind: a permission
fix or an in-place edit already applied gives nothing to fix the second time (the oracle re-run printed no names
and failed its self-check), so a noticed mistake could never be repaired. With it, a step ends right exactly when
its last attempt was right, and the episode is the stochastic process `envevo.rollout._exact` computes exactly.

Commands whose results the agent does not need before sending the next one (a step's look-around reads;
an action and its self-check) travel to the sandbox in one exec call, because each exec costs a compose
round trip (~0.25 s here). Every command still counts as one turn and reports its own exit code.
Each command runs in its own session without a terminal and with stdin closed, under a time limit, so
nothing can wait on a prompt (GNU patch asks on /dev/tty when a patch is already applied).
"""

from __future__ import annotations

import base64
import random
import shlex
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, Field

from envevo.rollout._profiles import SimProfile, explore_turns, step_probability
from envevo.runtime import ORACLE_AGENT

# run(commands) -> [(return code, output)] per command, in order: the agent side of `environment.exec`.
Exec = Callable[[list[str]], Awaitable[list[tuple[int, str]]]]

COMMAND_TIMEOUT = 60  # seconds per command inside the sandbox; a command over it exits 124 like any failure
_MARK = "::envevo-command-exit"
PRELUDE = "set -u\nexport LC_ALL=C\ncd /app\nmkdir -p /app/work /app/output\n"
UNDO_DIR = "/tmp/.envevo-sim-undo"  # outside /app: every path a step reads or changes is under /app
BACKUP = f"rm -rf {UNDO_DIR} && cp -a /app {UNDO_DIR}"
RESTORE = f"find /app -mindepth 1 -delete && cp -a {UNDO_DIR}/. /app/"
TURNS_PER_ATTEMPT = 3  # backup (first attempt) or restore (a retry), the action, its self-check


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
    passed: bool | None = Field(None, description="whether the trial passed (the verifier's reward; set when read back "
                                                  "from a trial dir, not by the agent)")


def shell(script: str) -> str:
    """A command that runs `script` with bash, immune to quoting (the snippets hold quotes and heredocs)."""
    return f'bash -c "$(echo {base64.b64encode(script.encode()).decode()} | base64 -d)"'


def batch_script(commands: list[str]) -> str:
    """One shell script running `commands` in order, each isolated, each followed by a line with its exit code."""
    lines = []
    for i, cmd in enumerate(commands):
        quoted = shlex.quote(cmd)
        lines.append(f"timeout -k 5 {COMMAND_TIMEOUT} setsid -w bash -c {quoted} </dev/null 2>&1; "
                     f"printf '\\n{_MARK} {i} %d\\n' $?")
    return "\n".join(lines)


def parse_batch(output: str, n: int) -> list[tuple[int, str]]:
    """Split `batch_script`'s output into (exit code, output) per command; a missing mark means the command died (rc 255)."""
    results: list[tuple[int, str]] = []
    rest = output
    for i in range(n):
        head, sep, tail = rest.partition(f"\n{_MARK} {i} ")
        if not sep:
            results += [(255, rest)] + [(255, "")] * (n - i - 1)
            return results
        code, _, rest = tail.partition("\n")
        results.append((int(code) if code.strip().lstrip("-").isdigit() else 255, head))
    return results


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

    async def turns(*cmds: str) -> list[tuple[int, str]]:
        ep.turns += len(cmds)
        return await run(list(cmds))

    for step, block in zip(chain.steps, blocks, strict=False):
        p = step_probability(prof, prior, step.scenario, step.skill, chain.goal)
        log = StepLog(index=block.index, scenario=step.scenario, skill=step.skill, p=round(p, 4))
        looks = _look_commands(block)
        await turns(*(looks[i % len(looks)] for i in range(explore_turns(prof, prior, step.scenario, step.skill, chain.goal))))
        for attempt in range(prof.retries + 1):
            right = rng.random() < p
            log.attempts.append(ORACLE_AGENT if right else "wrong")
            _undo, (rc, _), (rc_check, _) = await turns(
                BACKUP if attempt == 0 else RESTORE,
                shell(PRELUDE + "(\n" + (block.oracle_sh if right else block.wrong_sh) + "\n)\n"),
                f"test -s {shlex.quote(block.out_path)}")
            ok = rc == 0 and rc_check == 0
            log.self_check.append(ok)
            if ok and (right or rng.random() >= prof.notice):
                break
        ep.steps.append(log)
    return ep
