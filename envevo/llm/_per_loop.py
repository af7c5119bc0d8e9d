"""One value per running event loop.

asyncio primitives and HTTP client connection pools belong to the loop they were first used on. The CLI runs
more than one loop in a process (a preflight, then the run), so semaphores and SDK clients are made per loop,
and forgotten with it (weak keys: a closed loop's id may be reused by the next one).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable


class PerLoop[T]:
    def __init__(self, factory: Callable[[], T]):
        self._factory = factory
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        if loop not in self._values:
            self._values[loop] = self._factory()
        return self._values[loop]
