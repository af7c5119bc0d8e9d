"""Harbor's own schema for task.toml, checked when a task is prepared, before any trial.

Harbor validates task.toml only when a trial starts, and its error arrives cut to ``ValidationError: 1 validation
error for TaskConfig``. Here each problem is one line with the field, Harbor's rule and the fix. A fix that cannot change
what the task means (a plain ``[task] name``, the older form, becomes ``local/<name>``) is applied to the copy the trials
run, and stated like a base-image stand-in.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

# Harbor's ORG_NAME_PATTERN (harbor.constants): org/name, each part alphanumerics, '.', '_' and '-'.
_ORG_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$")
LOCAL_ORG = "local"


class SchemaProblem(BaseModel):
    field: str  # dotted, as in task.toml: task.name, environment.cpus
    rule: str  # Harbor's message
    fix: str

    def __str__(self) -> str:
        return f"task.toml {self.field}: {self.rule}; fix: {self.fix}"


class SchemaCheck(BaseModel):
    config: dict[str, Any]  # the config Harbor accepts (``fixes`` applied)
    fixes: list[str] = Field(default_factory=list)  # one stated line per fix applied
    problems: list[SchemaProblem] = Field(default_factory=list)  # what no safe fix covers


def _plain_name_fix(name: str) -> str | None:
    short = re.sub(r"[^a-zA-Z0-9._-]+", "-", name).strip("-.")
    if not short or "/" in name or ".." in short:
        return None
    return f"{LOCAL_ORG}/{short}"


_EXPECTED = {"int": "an integer", "float": "a number", "bool": "true or false", "string": "a string",
             "dict": "a table", "list": "a list", "enum": "one of the values the rule names"}


def _field(config: Mapping[str, Any], loc: tuple[int | str, ...], kind: str) -> str:
    """The dotted field as the task writes it: pydantic's union members (``cpus.int``) dropped."""
    parts: list[str] = []
    node: Any = config
    for p in loc:
        if isinstance(node, dict) and p in node:
            node = node[p]
        elif isinstance(node, list) and isinstance(p, int) and p < len(node):
            node = node[p]
        elif kind in ("missing", "extra_forbidden") and len(parts) == len(loc) - 1:
            pass
        else:
            break
        parts.append(str(p))
    return ".".join(parts) or "(top level)"


def _fix_hint(kind: str, field: str) -> str:
    if kind == "missing":
        return f"add {field}"
    if kind == "extra_forbidden":
        return f"remove {field}"
    if field == "task.name":
        return 'write it as "org/name", e.g. name = "local/my-task"'
    expected = next((v for k, v in _EXPECTED.items() if kind.startswith(k)), None)
    return f"set {field} to {expected}" if expected else f"change {field} as the rule asks"


def harbor_schema(config: Mapping[str, Any]) -> SchemaCheck:
    """Validate ``config`` (task.toml as a dict) against Harbor's ``TaskConfig``; apply the fixes that keep the task's
    meaning (a plain ``[task] name`` → ``local/<name>``) and list every other problem, one per field."""
    from harbor.models.task.config import TaskConfig
    from pydantic import ValidationError

    fixed = copy.deepcopy(dict(config))
    fixes: list[str] = []
    task = fixed.get("task")
    if isinstance(task, dict) and isinstance(name := task.get("name"), str) and not _ORG_NAME.match(name):
        if (new := _plain_name_fix(name)) is not None:
            task["name"] = new
            fixes.append(f'[task] name "{name}" → "{new}" (Harbor 0.26 asks for org/name)')
    try:
        TaskConfig.model_validate(fixed)
    except ValidationError as exc:
        by_field: dict[str, SchemaProblem] = {}
        for err in exc.errors():
            kind = str(err.get("type", ""))
            where = _field(fixed, tuple(err.get("loc", ())), kind)
            rule = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            if (seen := by_field.get(where)) is not None:  # a union: one line, every member's rule
                seen.rule = f"{seen.rule}; or {rule}" if rule not in seen.rule else seen.rule
                continue
            by_field[where] = SchemaProblem(field=where, rule=rule, fix=_fix_hint(kind, where))
        return SchemaCheck(config=fixed, fixes=fixes, problems=list(by_field.values()))
    return SchemaCheck(config=fixed, fixes=fixes)
