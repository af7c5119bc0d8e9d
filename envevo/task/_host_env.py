"""Host variables a task's task.toml pulls in through Harbor's ``${VAR}`` templates.

``[verifier] env = { ANTHROPIC_API_KEY = "${ANTHROPIC_API_KEY}" }`` asks the host for a variable when the trial runs;
Harbor fails that trial if it is unset (``${VAR:-default}`` has a fallback and never fails). Naming them up front lets a
verification say which variable this host lacks instead of counting the error against the task.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

# Harbor's template (harbor.utils.env): the whole value is ``${VAR}`` or ``${VAR:-default}``.
_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")


class HostEnvNeed(BaseModel):
    """One host variable a phase of the task needs: ``[verifier] env.KEY = "${VAR}"``."""

    phase: str  # verifier, solution or environment
    key: str
    var: str


def _env_tables(config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    verifier = config.get("verifier") or {}
    tables = [("verifier", verifier.get("env")), ("solution", (config.get("solution") or {}).get("env")),
              ("environment", (config.get("environment") or {}).get("env")),
              ("verifier", (verifier.get("environment") or {}).get("env") if isinstance(verifier, dict) else None)]
    for step in config.get("steps") or []:
        if isinstance(step, dict):
            tables.append(("verifier", (step.get("verifier") or {}).get("env")))
    return tables


def host_env_needs(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[HostEnvNeed]:
    """The ``${VAR}`` templates without a default in ``config`` whose variable ``environ`` (the host's) lacks.
    Set counts, even empty, as in Harbor. Every template when ``environ`` is ``{}``."""
    env = os.environ if environ is None else environ
    found: list[HostEnvNeed] = []
    for phase, table in _env_tables(config):
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if isinstance(value, str) and (m := _TEMPLATE.fullmatch(value)) and m[2] is None and m[1] not in env:
                if not any(n.phase == phase and n.var == m[1] for n in found):
                    found.append(HostEnvNeed(phase=phase, key=str(key), var=m[1]))
    return found
