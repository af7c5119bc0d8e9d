"""TRL's multi-turn environment for envevo tasks, verified the way the task says: ``EnvevoBashEnv``.

TRL 1.16's ``GRPOTrainer(environment_factory=...)`` builds environment objects and drives them: ``reset(**row)`` per
rollout, its public methods as the model's tools, ``get_reward()`` after the rollout. TRL's own ``HarborEnv`` runs the
tests in the agent's container, so a task's separate verifier, artifacts, collect hooks and no-network policy are
lost there, and a ``python3`` shim passes tasks that envevo's red team proved unhackable. ``EnvevoBashEnv`` keeps
TRL's interface and replaces only what runs the task: each rollout is a live trial of envevo's runtime (a real
trial whose agent runs the model's commands), verified with the task's own verifier mode.

This module imports neither TRL nor Harbor: the trials run in a worker process (``ENVEVO_RUNTIME_PYTHON`` names its
interpreter when the trainer's cannot import Harbor), shared by every environment of the process.

    from envevo.trainers.trl import bash_environment, env_reward
    trainer = EnvevoGRPOTrainer(..., environment_factory=bash_environment(env="podman"))

A rollout whose sandbox failed for reasons that are not the policy's (a build, the machine) gets reward ``None``,
which TRL ignores, rather than a 0 that would teach the policy something false.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from envevo.runtime import DEFAULT_ENGINE, ErrorKind, TrialOutcome
from envevo.trainers._live_client import LiveTrialClient, LiveTrialFailed, shared_client
from envevo.trainers._runner import RunnerSpec, check_tasks, task_configs, unhonoured
from envevo.trainers.trl import BASH_ENV, HARBOR_ENV

# Error kinds that are not the policy's doing: no reward at all, instead of a false 0.
_NOT_THE_POLICY = {ErrorKind.INFRASTRUCTURE_ERROR, ErrorKind.ENVIRONMENT_BUILD_FAILURE}

BASH_PROMPT_SUFFIX = (
    "\n\nYou have one tool, `bash`: it runs a shell command in the task's sandbox and returns its output. "
    "Files and processes persist between calls. When the task is done, stop calling tools."
)


_CHECKED: set[str] = set()


class EnvevoBashEnv:
    """A TRL environment with one ``bash`` tool; each rollout is a live trial of the row's ``task_dir``."""

    PROMPT_SUFFIX = BASH_PROMPT_SUFFIX
    runner: ClassVar[RunnerSpec] = BASH_ENV

    def __init__(self, env: str = DEFAULT_ENGINE, *, python: str | None = None, timeout_sec: int = 180,
                 max_output: int = 8000, keep_trials: bool = False) -> None:
        self._env = env
        self._python = python
        self._timeout = int(timeout_sec)
        self._max_output = int(max_output)
        self._keep = keep_trials
        self._client: LiveTrialClient | None = None
        self._trial: str | None = None
        self._outcome: TrialOutcome | None = None

    @property
    def outcome(self) -> TrialOutcome | None:
        """The last finished rollout's trial outcome (reward, error kind, timings, trial dir when kept)."""
        return self._outcome

    def reset(self, task_dir: str | None = None, **row: object) -> str:
        if task_dir is None:
            raise ValueError("EnvevoBashEnv.reset needs the row's task_dir (HarborSpec's dataset has it)")
        instruction = Path(task_dir, "instruction.md")
        if not instruction.is_file():
            raise ValueError(f"{task_dir} has no instruction.md: not a Harbor task dir")
        if task_dir not in _CHECKED:  # once per task: what it needs, this runner must honour
            check_tasks(self.runner, task_configs([task_dir]))
            _CHECKED.add(task_dir)
        self._drop()
        if self._client is None:
            self._client = shared_client(self._python)
        self._outcome = None
        self._trial = self._client.start(task_dir, self._env, keep=self._keep)
        return instruction.read_text(encoding="utf-8") + self.PROMPT_SUFFIX

    def bash(self, command: str) -> str:
        """Run a shell command in the task's sandbox and return its combined stdout and stderr.

        Args:
            command: The shell command to run.

        Returns:
            The command's output, or why it could not run.
        """
        if self._trial is None or self._client is None:
            return "(no task: the environment was not reset)"
        try:
            code, output = self._client.exec(self._trial, command, self._timeout)
        except LiveTrialFailed as exc:
            return f"(not run: {exc})"
        if len(output) > self._max_output:
            output = output[: self._max_output] + "\n... [truncated]"
        if code is None:
            return output + f"\n(timed out after {self._timeout}s)"
        return output or f"(no output, exit code {code})"

    def get_reward(self) -> float | None:
        """End the rollout and verify it; the verifier's reward, or None when the sandbox failed (not the policy)."""
        if self._trial is None or self._client is None:
            return None
        trial, self._trial = self._trial, None
        try:
            self._outcome = self._client.finish(trial)
        except LiveTrialFailed:
            return None
        if self._outcome.error_kind in _NOT_THE_POLICY:
            return None
        return float(self._outcome.reward or 0.0)

    def _drop(self) -> None:
        """A rollout whose reward was never read: remove its sandbox without a verdict."""
        if self._trial is not None and self._client is not None:
            trial, self._trial = self._trial, None
            try:
                self._client.cancel(trial)
            except LiveTrialFailed:
                pass

    def __del__(self) -> None:
        try:
            self._drop()
        except Exception:  # noqa: BLE001 - interpreter shutdown: the worker removes what is left when it exits
            pass


def bash_environment(env: str = DEFAULT_ENGINE, **options: Any) -> Callable[[], EnvevoBashEnv]:
    """TRL's ``environment_factory``: a picklable zero-argument callable making an ``EnvevoBashEnv``."""
    return functools.partial(EnvevoBashEnv, env, **options)


def env_reward(environments: Sequence[EnvevoBashEnv] | None = None,
               environment_reward: Sequence[float | None] | None = None, **_: object) -> list[float | None]:
    """A ``reward_funcs`` entry, for trainers that want the reward as a named function rather than TRL's automatic
    ``get_reward`` column: the rollouts' rewards (``AsyncGRPOTrainer`` passes them already computed)."""
    if environment_reward is not None:
        return [None if r is None else float(r) for r in environment_reward]
    return [e.get_reward() for e in environments or []]


def lost_under_trl_harbor_env(task_dirs: Sequence[str | os.PathLike[str]]) -> dict[str, list[str]]:
    """For each task that needs it, what TRL's ``HarborEnv`` would not honour (task name -> what, as
    :data:`~envevo.trainers.trl.HARBOR_ENV` declares it). Read through envevo's loader, so every schema version counts
    (``allow_internet = false`` is ``no-network`` there)."""
    lost = unhonoured(HARBOR_ENV, task_configs(task_dirs))
    return {name: [c.value for c in caps] for name, caps in lost.items()}
