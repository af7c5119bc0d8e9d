"""Which engine a run uses, by name: a lazy map name -> "module:builder", as Harbor's environment factory does.

An engine's package is imported only when a run picks it, so `import envevo.evolve` stays light and a missing
optional dependency ends in one line naming what to install. A builder takes the LLM settings (None for engines
that use no model), the verification environment and extra rubric files, and returns the engine and its
rubric-slot checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo._registry import Entry, Registry
from envevo.errors import UserError

if TYPE_CHECKING:
    from envevo.llm import LLMSettings


# name -> "module:builder" (extra: the pip extra that provides its dependencies; None: core dependencies).
ENGINES = Registry("engine", {
    "procedural": Entry("envevo.evolve._engines_factory:procedural_engine", summary="offline, exact ξ and D_T"),
    "llm": Entry("envevo.evolve.engines.llm:build_llm_engine", summary="LLM roles on any model provider"),
}, error=UserError)
# Engines that call models (their options are --model, --base-url, …).
_USES_LLM = frozenset({"llm"})


def engine_names() -> list[str]:
    return ENGINES.names()


def uses_llm(name: str) -> bool:
    ENGINES.entry(name)  # an unknown name is an error, not "no"
    return name in _USES_LLM


def make_engine(name: str, settings: LLMSettings | None = None, *, env: str = "podman",
                rubric_files: Sequence[Path] = ()) -> tuple[Any, list[Any]]:
    """The engine `name` and its rubric-slot checks. LLM engines need `settings` (see `envevo.llm.settings_with_options`)."""
    builder = ENGINES.load(name)
    if uses_llm(name) and settings is None:
        from envevo.llm import LLMSettings

        settings = LLMSettings()
    engine, checks = builder(settings, env=env, rubric_files=list(rubric_files))
    return engine, list(checks)


def procedural_engine(settings: LLMSettings | None = None, *, env: str = "podman",
                      rubric_files: Sequence[Path] = ()) -> tuple[Any, list[Any]]:
    """The offline engine; its rubric slot is the rule-based quality check (it reads no model or rubric file)."""
    from envevo.evolve.engines.procedural import ProceduralEngine, quality_check
    from envevo.verify import RuleRubric

    return ProceduralEngine(), [RuleRubric(quality_check)]
