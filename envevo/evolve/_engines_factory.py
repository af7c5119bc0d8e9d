"""Which engine a run uses, by name: a lazy map name -> "module:Class", as Harbor's environment factory does.

An engine's package is imported only when a run picks it (or asks what it can do), so `import envevo.evolve` stays
light and a missing optional dependency ends in one line naming what to install. The registry holds engine classes
(`EngineClass`): their `capabilities` are read before an engine is built, and `build` takes the LLM settings (None
for engines that use no model), the verification environment and extra rubric files, and returns the engine and its
rubric-slot checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envevo._registry import Entry, Registry
from envevo.errors import UserError
from envevo.evolve._engine import Capability, Engine, EngineClass
from envevo.runtime import DEFAULT_ENGINE

if TYPE_CHECKING:
    from envevo.llm import LLMSettings
    from envevo.verify import TaskVerifier


# name -> "module:Class" (extra: the pip extra that provides its dependencies; None: core dependencies).
ENGINES = Registry("engine", {
    "procedural": Entry("envevo.evolve.engines.procedural:ProceduralEngine", summary="offline, exact ξ and D_T"),
    "llm": Entry("envevo.evolve.engines.llm:LLMEngine", summary="LLM roles on any model provider"),
}, error=UserError)


def engine_names() -> list[str]:
    return ENGINES.names()


def engine_class(name: str) -> EngineClass:
    """The registered engine class `name`, imported now (an unknown name is a UserError)."""
    cls: EngineClass = ENGINES.load(name)
    return cls


def engine_capabilities(name: str) -> frozenset[Capability]:
    return engine_class(name).capabilities


def uses_llm(name: str) -> bool:
    """Whether engine `name` calls models (its options are --model, --base-url, …)."""
    return Capability.USES_LLM in engine_capabilities(name)


def make_engine(name: str, settings: LLMSettings | None = None, *, env: str = DEFAULT_ENGINE,
                rubric_files: Sequence[Path] = ()) -> tuple[Engine, list[TaskVerifier]]:
    """The engine `name` and its rubric-slot checks. LLM engines need `settings` (see `envevo.llm.settings_with_options`)."""
    cls = engine_class(name)
    if Capability.USES_LLM in cls.capabilities and settings is None:
        from envevo.llm import LLMSettings

        settings = LLMSettings()
    engine, checks = cls.build(settings, env=env, rubric_files=list(rubric_files))
    return engine, list(checks)
