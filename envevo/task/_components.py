"""The five components of a task. Every file belongs to exactly one of them."""

from __future__ import annotations

from typing import Literal, get_args

Component = Literal["instruction", "environment", "verification", "solution", "config"]
COMPONENTS: tuple[Component, ...] = get_args(Component)

_TOP_DIRS: dict[str, Component] = {"environment": "environment", "tests": "verification", "solution": "solution"}
# steps/<name>/workdir holds files staged into the container before that step runs.
_STEP_DIRS: dict[str, Component] = {"workdir": "environment", "tests": "verification", "solution": "solution"}
# What the agent is told: the instruction and any prior-context trajectory that goes with it.
_INSTRUCTION_FILES = frozenset({"instruction.md", "trajectory.json"})


def component_of(relpath: str) -> Component:
    """The component a task-relative posix path belongs to; unknown files count as config."""
    parts = relpath.split("/")
    dirs = _TOP_DIRS
    if len(parts) >= 3 and parts[0] == "steps":
        parts, dirs = parts[2:], _STEP_DIRS
    if len(parts) == 1:
        return "instruction" if parts[0] in _INSTRUCTION_FILES else "config"
    return dirs.get(parts[0], "config")


def check_component(name: str) -> Component:
    """Validate a component name given by a user."""
    from envevo.errors import TaskError

    if name not in COMPONENTS:
        raise TaskError(f"unknown component {name!r}; choose one of: {', '.join(COMPONENTS)}")
    return name
