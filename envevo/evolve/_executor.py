"""How lineages are spread over workers. asyncio in one process is the default; a Ray executor can
implement the same `map` to spread lineages over machines."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

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
