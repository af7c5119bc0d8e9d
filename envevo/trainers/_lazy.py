"""A trainer package's public names, loaded from its modules on first use: the package itself (and its runner
constants) imports without the trainer's framework, which only the module that subclasses it needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for PACKAGE: NAME -> its attribute in ``PACKAGE.<names[NAME]>``."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
