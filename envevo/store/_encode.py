"""How values go into and come out of store rows: timestamps, JSON columns, and the checked enums."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from envevo.store._models import StoreError
from envevo.task import COMPONENTS
from envevo.trace import Difficulty, Direction, Effort, Trace


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def to_json(obj: object) -> str | None:
    """A JSON column's text (NULL for None); pydantic models as their own JSON."""
    if obj is None:
        return None
    if isinstance(obj, BaseModel):
        return obj.model_dump_json()
    return json.dumps(obj, default=json_default)


def json_default(obj: object) -> object:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return str(obj)


def as_dict(obj: object) -> object:
    """Plain JSON data of a model, a dict or a list (what a row's JSON column will read back as)."""
    if obj is None:
        return None
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return json.loads(json.dumps(obj, default=json_default))


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def direction_value(value: Direction | str) -> str:
    try:
        return Direction(value).value
    except ValueError:
        raise StoreError(
            f"unknown direction {value!r}; choose one of: {', '.join(d.value for d in Direction)}"
        ) from None


def effort_value(value: Effort | str) -> str:
    try:
        return Effort(value).value
    except ValueError:
        raise StoreError(f"unknown effort {value!r}; choose one of: {', '.join(e.value for e in Effort)}") from None


def component_list(mutated: Iterable[str]) -> list[str]:
    """Component names checked and put in their canonical order."""
    names = set(mutated)
    unknown = names - set(COMPONENTS)
    if unknown:
        raise StoreError(f"unknown component(s) {sorted(unknown)}; components are: {', '.join(COMPONENTS)}")
    return [c for c in COMPONENTS if c in names]


def l_and_dt(trace: Trace | None, difficulty: Difficulty | None) -> tuple[int | None, float | None]:
    """The ``L`` and ``D_T`` columns, which repeat the JSON of ξ and D_T for plain-SQL queries."""
    if difficulty is not None:
        return difficulty.L, difficulty.D_T
    return (trace.L if trace is not None else None), None
