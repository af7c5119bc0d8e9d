"""How the corpus estimator reads RUN dirs without importing the store (which sits on a higher floor)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from envevo.trace._model import Trace


class RunSource(Protocol):
    """Which dirs are runs, and the committed versions of one (`envevo.evolve.StoreRuns` reads the store)."""

    def is_run(self, path: Path) -> bool: ...

    def versions(self, run: Path) -> Iterable[tuple[str, Trace | None, str]]:
        """(where, ξ or None when stored without, task hash) per committed version."""
        ...
