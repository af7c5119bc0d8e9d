"""Where generations run. asyncio, in the driver's process, is the default; the Ray executor (envevo[ray])
runs each generation on a cluster worker and the driver commits what it sends back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from envevo._registry import Entry, Registry
from envevo.errors import UserError

if TYPE_CHECKING:
    from envevo.evolve._loop import LineageRunner
    from envevo.store import Version

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    async def map(self, fn: Callable[[T], Awaitable[R]], items: Sequence[T], concurrency: int) -> list[R]: ...

    async def generation(self, runner: LineageRunner, lineage: str, g: int, parent: Version) -> str | None:
        """Run one generation (the unit of work) and have it committed; as `LineageRunner.generation`."""
        ...

    def trial_runner(self) -> Callable[[Any], Awaitable[Any]] | None:
        """What runs each trial of `verify` and `rollout` (see runtime.set_trial_runner); None: this process."""
        ...


class AsyncioExecutor:
    def __init__(self, **options: Any):
        pass  # nothing to set: every generation runs in this process

    async def generation(self, runner: LineageRunner, lineage: str, g: int, parent: Version) -> str | None:
        return await runner.generation(lineage, g, parent)

    def trial_runner(self) -> Callable[[Any], Awaitable[Any]] | None:
        return None

    async def map(self, fn: Callable[[T], Awaitable[R]], items: Sequence[T], concurrency: int) -> list[R]:
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(item: T) -> R:
            async with gate:
                return await fn(item)

        return list(await asyncio.gather(*(one(i) for i in items)))


# Executors by name. Another one (e.g. on Ray) registers as "module:Class" with its pip extra, so installs
# without that extra never import it.
EXECUTORS = Registry("executor", {
    "asyncio": Entry("envevo.evolve._executor:AsyncioExecutor", summary="lineages as tasks in this process"),
    "ray": Entry("envevo.evolve._ray:RayExecutor", extra="ray",
                 summary="each generation a Ray task on a cluster worker; the driver commits"),
}, error=UserError)


def make_executor(name: str = "asyncio", **options: Any) -> Executor:
    """The executor `name`, with its options (e.g. Ray's `address`)."""
    executor: Executor = EXECUTORS.load(name)(**options)
    return executor


def scale_out(executor: str = "asyncio", address: str | None = None, max_sandboxes: int | None = None,
              start_rate: float | None = None, *, trials: bool = False) -> Executor:
    """Set the process's sandbox quotas and make its executor; with `trials`, every trial (verify, rollout) then
    runs where the executor puts it (one Ray task each under Ray)."""
    from envevo.runtime import set_quota, set_trial_runner

    set_quota(max_sandboxes, start_rate)
    made = make_executor(executor, address=address)
    if trials:
        set_trial_runner(made.trial_runner())
    return made
