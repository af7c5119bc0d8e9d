"""Lazy plugin registries: a name maps to a `"module:attr"` string, imported only when the name is used.

The shape of Harbor's environment factory (name -> module, class, pip extra). A plugin on a higher floor (an
engine, an estimator, a scheduler, an exploit, an executor) registers with the lower floor that uses it by a
string, so no package imports upward, and an optional dependency is loaded only by the runs that need it. When
that import fails for want of an extra, the error names the extra to install.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Entry:
    target: str  # "package.module:attr" (attr may be dotted, e.g. "Class.from_settings")
    extra: str | None = None  # the pip extra whose packages the target imports
    summary: str = ""

    def load(self) -> Any:
        module, _, attr = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


class Registry:
    """name -> Entry, for one kind of plugin (`kind` names it in errors: "engine", "p_T estimator", …).

    `error` is the exception raised for an unknown name or a missing extra: callers pass envevo.errors.UserError
    where a user typed the name (this module sits beside envevo.errors, on the floor below everything).
    """

    def __init__(self, kind: str, entries: dict[str, Entry] | None = None, *, error: type[Exception] = LookupError):
        self.kind = kind
        self.error = error
        self._entries: dict[str, Entry] = dict(entries or {})

    def register(self, name: str, target: str, extra: str | None = None, summary: str = "") -> None:
        old = self._entries.get(name)
        if old is not None and old.target != target:
            raise ValueError(f"{self.kind} {name!r} is registered twice ({old.target}, {target})")
        self._entries[name] = Entry(target, extra, summary)

    def names(self) -> list[str]:
        return list(self._entries)

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise self.error(f"unknown {self.kind} {name!r}; choose one of: {', '.join(sorted(self._entries))}") from None

    def load(self, name: str) -> Any:
        """The registered object (a class or a factory), imported now."""
        entry = self.entry(name)
        try:
            return entry.load()
        except ImportError as exc:
            if entry.extra is None:
                raise
            raise self.error(f"the {self.kind} {name!r} needs the {entry.extra!r} extra: "
                            f"pip install 'envevo[{entry.extra}]' ({exc})") from exc

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, name: str) -> Entry:
        return self.entry(name)
