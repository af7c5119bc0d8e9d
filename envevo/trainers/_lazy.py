"""A trainer package's public names, loaded from its modules on first use: the package itself (and its runner
constants) imports without the trainer's framework, which only the module that subclasses it needs."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


class LazyNames:
    """A module ``__getattr__`` for PACKAGE: NAME -> its attribute in ``PACKAGE.<names[NAME]>``."""

    def __init__(self, package: str, names: Mapping[str, str]) -> None:
        self.package = package
        self.names = dict(names)  # public name -> the private module that defines it (tests/trainers check them)

    def __call__(self, name: str) -> Any:
        if name in self.names:
            return getattr(importlib.import_module(f"{self.package}.{self.names[name]}"), name)
        raise AttributeError(f"module {self.package!r} has no attribute {name!r}")


def lazy_names(package: str, names: Mapping[str, str]) -> LazyNames:
    return LazyNames(package, names)
