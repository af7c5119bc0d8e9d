"""Trials see no host variable the user did not pass, and their logs are private (0700).

Harbor resolves a task.toml's ``${VAR}`` templates from this process's environment; envevo hands it none the user did
not pass (`envevo.task.host_env_resolved`): a trial runs from a private copy holding the resolved values, removed
after the trial, and a task naming a variable not passed is refused before any container starts."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Coroutine
from typing import Any

from envevo._home import private_dir
from envevo.errors import TaskError
from envevo.runtime._outcome import ErrorKind, TrialOutcome, TrialSpec
from envevo.task import host_env_resolved

Run = Callable[[TrialSpec], Coroutine[Any, Any, TrialOutcome]]


def host_env_guarded(run: Run) -> Run:
    """`run`, given a task dir that holds no host variable template."""

    @functools.wraps(run)
    async def guarded(spec: TrialSpec) -> TrialOutcome:
        private_dir(spec.trials_dir)  # 0700 when new: the trial's logs hold task output and any passed value
        try:
            run_dir = host_env_resolved(spec.task_dir, spec.trials_dir / ".host-env")
        except TaskError as exc:
            return TrialOutcome(task=spec.task_dir.name, agent=spec.agent, model=spec.model, subject=spec.subject,
                                error_kind=ErrorKind.INFRASTRUCTURE_ERROR, exception_type="HostEnvRefused",
                                error_message=f"refused before any container started: {exc}"[:500])
        if run_dir == spec.task_dir:
            return await run(spec)
        try:
            return await run(spec.model_copy(update={"task_dir": run_dir}))
        finally:
            shutil.rmtree(run_dir.parent, ignore_errors=True)  # the copy holds passed values: not left behind

    return guarded
