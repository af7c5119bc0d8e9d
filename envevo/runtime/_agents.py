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

ShellExec = Callable[[str, int], Awaitable[tuple[int, str]]]


class DriverResult(BaseModel):
    metadata: dict[str, Any] = Field(default_factory=dict, description="the trial's agent metadata, e.g. n_turns")
    logs: dict[str, str] = Field(default_factory=dict, description="file name -> text, written to the agent log dir")


class ShellDriver(Protocol):
    async def run(self, instruction: str, exec: ShellExec) -> DriverResult: ...


def load_driver(target: str, options: dict[str, Any]) -> ShellDriver:
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(**options)
