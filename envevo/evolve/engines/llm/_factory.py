"""Build the LLM engine and its rubric judge from settings: what `envevo evolve --engine llm` calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envevo.evolve.engines.llm._engine import LLMEngine
from envevo.evolve.engines.llm._judge import RubricJudge
from envevo.evolve.engines.llm._realize import RealizesPlan
from envevo.evolve.engines.llm._sandbox import ContainerShell
from envevo.llm import PROJECT_RUBRIC, LLMRuntime, LLMSettings, Rubric, UsageRecord, default_rubric, load_rubric
from envevo.runtime import DEFAULT_ENGINE

if TYPE_CHECKING:
    from pydantic_ai.models import Model


def task_rubric(settings: LLMSettings, extra: Sequence[Path] = ()) -> Rubric:
    """The judge's rubric: the default, then [llm] rubrics, then --rubric files, then ./envevo-rubric.toml."""
    files = [*settings.rubrics, *extra]
    if PROJECT_RUBRIC.is_file() and PROJECT_RUBRIC.resolve() not in {Path(f).resolve() for f in files}:
        files.append(PROJECT_RUBRIC)
    return default_rubric("task").merged(load_rubric(f) for f in files)


def build_llm_engine(
    settings: LLMSettings,
    *,
    env: str = DEFAULT_ENGINE,
    rubric_files: Sequence[Path] = (),
    on_usage: Callable[[UsageRecord], None] | None = None,
    models: Mapping[str, Model] | None = None,
    container_shell: bool = True,
) -> tuple[LLMEngine, list[RubricJudge | RealizesPlan]]:
    """The engine and its checks (the rubric judge and `realizes_plan`). Raises LLMConfigError for a missing model
    or a bad rubric."""
    runtime = LLMRuntime(settings, models=models, on_usage=on_usage)
    runtime.specs()  # every role has a model, or one clear error now
    # The Modifier's shell runs on the same environment as verification: local, compose or cloud.
    shell = ContainerShell(env, timeout_sec=settings.command_timeout_sec) if container_shell else None
    engine = LLMEngine(runtime, task_rubric=task_rubric(settings, rubric_files), shell=shell, env=env)
    return engine, engine.checks()
