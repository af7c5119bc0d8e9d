"""ξ of a task, where it can be read without a model: from the task's `[metadata.envevo]`.

A task that an LLM engine made carries ξ as `trace`. A procedural task carries the exact chain it was composed
from instead, and only the catalog can read a chain (its final scenario comes from the last skill's output). The
catalog sits a floor above trace, so the chain's reader is reached by name through `XI_READERS`, keyed by the
task's `engine`, as estimators are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from envevo._registry import Entry, Registry
from envevo.errors import UserError
from envevo.trace._model import Trace

if TYPE_CHECKING:
    from envevo.task import Task

# `[metadata.envevo].engine` -> a reader of the `chain` it carries: (task) -> ξ.
XI_READERS = Registry("ξ reader", {
    "procedural": Entry("envevo.catalog:chain_trace", summary="the exact chain a procedural task was composed from"),
}, error=UserError)


def _chain_engine(meta: dict[str, Any]) -> str | None:
    """The engine whose reader reads this task's chain, if it carries one."""
    engine = meta.get("engine")
    if isinstance(engine, str) and engine in XI_READERS and isinstance(meta.get("chain"), dict):
        return engine
    return None


def has_trace(task: Task) -> bool:
    """Whether the task carries ξ in `[metadata.envevo]` (so no model is needed to read it)."""
    meta = task.envevo_metadata or {}
    return _chain_engine(meta) is not None or isinstance(meta.get("trace"), dict)


def trace_of_task(task: Task) -> Trace:
    """ξ of a task from its `[metadata.envevo]` (procedural tasks carry the exact chain)."""
    meta = task.envevo_metadata or {}
    engine = _chain_engine(meta)
    if engine is not None:
        reader: Callable[[Task], Trace] = XI_READERS.load(engine)
        return reader(task)
    if isinstance(meta.get("trace"), dict):
        return Trace.model_validate(meta["trace"])
    raise UserError(f"task {task.name} carries no ξ in [metadata.envevo]; extract it with a model: "
                    "--extract-model provider:name [--base-url URL] (the LLM engine's Proposer)")
