"""Agents as plain-Python drivers of the sandbox's shell, run by a Harbor custom agent (`DRIVEN_AGENT`).

envevo's own agents that only run commands (the simulated skill-profile agents of envevo.rollout) implement the
small `ShellDriver` protocol below and never import Harbor. Harbor instantiates `DrivenAgent` from the trial's
agent kwargs (TrialSpec.agent_kwargs): `driver` (the driver's class as "module:Class") and `options` (its keyword
arguments). The driver gets an `exec(command, timeout_sec)` that returns (exit code, stdout + stderr) and raises
RuntimeError when the environment's exec times out (Harbor's behaviour). What it returns goes to the trial's
agent context (metadata, no tokens, no cost) and its log files to the trial's agent/ log dir.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pydantic import BaseModel, Field

# The Harbor agent (envevo/runtime/_driven_agent.py); a string, so that this module loads without Harbor.
DRIVEN_AGENT = "envevo.runtime._driven_agent:DrivenAgent"
# The Harbor agent that runs a fixed script (an exploit's, a near-miss solution's): envevo/runtime/_scripted_agent.py.
SCRIPTED_AGENT = "envevo.runtime._scripted_agent:ScriptedAgent"

# Harbor's built-in agents: the task's reference solution (solution/solve.sh), and the empty solution (does nothing).
ORACLE_AGENT = "oracle"
NOP_AGENT = "nop"

ShellExec = Callable[[str, int], Awaitable[tuple[int, str]]]


class DriverResult(BaseModel):
    metadata: dict[str, Any] = Field(default_factory=dict, description="the trial's agent metadata, e.g. n_turns")
    logs: dict[str, str] = Field(default_factory=dict, description="file name -> text, written to the agent log dir")


class ShellDriver(Protocol):
    async def run(self, instruction: str, exec: ShellExec) -> DriverResult: ...


#: Harbor agents that take a per-answer output cap, and where (harbor 0.26): terminus-2 forwards `llm_call_kwargs` to
#: every LiteLLM call; goose and mini-swe-agent take `max_tokens`; mcode `max_output_tokens`.
OUTPUT_CAP_KWARGS: dict[str, tuple[str, ...]] = {
    "terminus-2": ("llm_call_kwargs", "max_tokens"),
    "goose": ("max_tokens",),
    "mini-swe-agent": ("max_tokens",),
    "mcode": ("max_output_tokens",),
}


def with_output_cap(agent: str, kwargs: dict[str, Any], cap: int | None) -> dict[str, Any]:
    """`kwargs` with the agent's own output cap set to `cap`, so one answer of its model is bounded; a cap the user
    gave in the kwargs wins, and an agent without such an option (or cap None) gets the kwargs unchanged."""
    where = OUTPUT_CAP_KWARGS.get(agent)
    if where is None or cap is None:
        return dict(kwargs)
    out = dict(kwargs)
    if len(where) == 1:
        out.setdefault(where[0], cap)
        return out
    table, key = where
    nested = dict(out.get(table) or {})
    nested.setdefault(key, cap)
    out[table] = nested
    return out


def load_driver(target: str, options: dict[str, Any]) -> ShellDriver:
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(**options)
