"""How lineages are spread over workers. asyncio in one process is the default; a Ray executor can
implement the same `map` to spread lineages over machines."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from envevo._registry import Entry, Registry
from envevo.errors import UserError

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    async def map(self, fn: Callable[[T], Awaitable[R]], items: Sequence[T], concurrency: int) -> list[R]: ...


class AsyncioExecutor:
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
}, error=UserError)


def make_executor(name: str = "asyncio") -> Executor:
    executor: Executor = EXECUTORS.load(name)()
    return executor
