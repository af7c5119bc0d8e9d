"""OpenEnv 0.10: an rl export served as OpenEnv environments, each episode a live trial of envevo's runtime.

TRL's Harbor path moves to OpenEnv: a trainer talks to an environment server through OpenEnv's ``EnvClient`` (a
WebSocket session per episode: ``reset``, ``step``, ``state``). This server keeps envevo's guarantees on that path:
``reset`` starts a live trial of a task of the export (the one named by ``task=``, else by ``seed``, else the next
in turn), ``step(EnvevoAction(command=...))`` runs a bash command in its sandbox, and
``step(EnvevoAction(submit=True))`` ends the agent's phase and returns the reward of the task's own verifier mode
(a separate verifier container that sees only the artifacts, collect hooks, no network where the task says so).
Nothing the agent writes in its sandbox is read as a reward.

Bounded: a session whose client disconnects is closed by OpenEnv's server, which cancels its trial (its sandbox is
removed); an episode with no call for ``idle_timeout`` seconds (a client that never asks for the reward) is cancelled
by its own timer, which a call in progress holds off (OpenEnv's own idle reaper counts a long step as idle, so it is
left off); an active one ends at the task's own agent timeout. The trials run in a worker process
(``ENVEVO_RUNTIME_PYTHON`` names an interpreter with Harbor when this one has none), which removes every sandbox it
holds when the server exits.

    app = create_export_app("runs/demo/rl", env="podman", max_sessions=8, idle_timeout=300)
    # or: envevo serve runs/demo/rl --port 8000

    async with EnvevoEnvClient(base_url="http://127.0.0.1:8000", message_timeout_s=600) as client:
        result = await client.reset(task="lin0__g03")
        result = await client.step(EnvevoAction(command="ls /app"))
        result = await client.step(EnvevoAction(submit=True))    # result.reward, result.done
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State
from pydantic import Field

from envevo.runtime import DEFAULT_ENGINE, ErrorKind, TrialOutcome
from envevo.trainers._base import ENV_ID, check_export_rows, read_export_index
from envevo.trainers._live_client import LiveTrialFailed, shared_client
from envevo.trainers._ports import check_port
from envevo.trainers._runner import RunnerSpec, check_tasks, task_configs
from envevo.trainers.openenv import SERVER

_NOT_THE_POLICY = {ErrorKind.INFRASTRUCTURE_ERROR, ErrorKind.ENVIRONMENT_BUILD_FAILURE}
PROMPT_SUFFIX = ("\n\nEach step runs one bash command in the task's sandbox (files and processes persist). "
                 "Submit when the task is done; the task's verifier then decides the reward.")


class EnvevoAction(Action):
    command: str | None = Field(default=None, description="a bash command to run in the task's sandbox")
    submit: bool = Field(default=False, description="end the episode: the task's verifier decides the reward")


class EnvevoObservation(Observation):
    task: str = Field(default="", description="the export name of the episode's task (<lineage>__gNN)")
    instruction: str = Field(default="", description="the task's instruction (on reset)")
    output: str = Field(default="", description="the command's stdout and stderr, or why it did not run")
    exit_code: int | None = Field(default=None, description="the command's exit code; None: timed out or not run")


class EnvevoState(State):
    task: str | None = None
    lineage: str | None = None
    generation: int | None = None


class EnvevoTaskEnvironment(Environment[EnvevoAction, EnvevoObservation, EnvevoState]):
    """One session: an episode at a time, each a live trial of a task of the export."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    runner: ClassVar[RunnerSpec] = SERVER

    def __init__(self, rows: list[dict[str, Any]], turn: itertools.count[int], *, env: str = DEFAULT_ENGINE,
                 python: str | None = None, timeout_sec: int = 180, max_output: int = 8000,
                 idle_timeout: float = 300) -> None:
        super().__init__()
        self._rows = {str(r[ENV_ID]): r for r in rows}
        self._order = [str(r[ENV_ID]) for r in rows]
        self._turn = turn
        self._env, self._python, self._timeout, self._max_output = env, python, int(timeout_sec), int(max_output)
        self._trial: str | None = None
        self._lock = threading.Lock()
        self._state = EnvevoState()
        self.outcome: TrialOutcome | None = None
        self._idle_timeout = float(idle_timeout)
        self._idle: threading.Timer | None = None
        self._idled = False

    # The idle timer: stopped while a call runs, restarted when it returns; firing ends the episode.
    def _busy(self) -> None:
        with self._lock:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None

    def _rest(self) -> None:
        with self._lock:
            if self._trial is not None:
                self._idle = threading.Timer(self._idle_timeout, self._on_idle)
                self._idle.daemon = True
                self._idle.start()

    def _on_idle(self) -> None:
        self._idled = True
        self._drop()

    @property
    def state(self) -> EnvevoState:
        return self._state

    def _pick(self, task: str | None, seed: int | None) -> str:
        if task is not None:
            if task not in self._rows:
                raise ValueError(f"no task {task!r} in this export (e.g. {', '.join(self._order[:3])})")
            return task
        k = seed if seed is not None else next(self._turn)
        return self._order[k % len(self._order)]

    def reset(self, seed: int | None = None, episode_id: str | None = None, task: str | None = None,
              **_: object) -> EnvevoObservation:
        name = self._pick(task, seed)
        row = self._rows[name]
        check_export_rows([row])  # the task dir is still what was exported and verified
        self._busy()
        self._drop()
        trial = shared_client(self._python).start(row["task_dir"], self._env)
        with self._lock:
            self._trial = trial
        self._rest()
        self.outcome, self._idled = None, False
        self._state = EnvevoState(episode_id=episode_id or trial, step_count=0, task=name,
                                  lineage=str(row.get("lineage")), generation=int(row.get("generation") or 0))
        instruction = Path(row["task_dir"], "instruction.md").read_text(encoding="utf-8") + PROMPT_SUFFIX
        return EnvevoObservation(task=name, instruction=instruction)

    def step(self, action: EnvevoAction, timeout_s: float | None = None, **_: object) -> EnvevoObservation:
        self._busy()
        try:
            return self._step(action, timeout_s)
        finally:
            self._rest()

    def _step(self, action: EnvevoAction, timeout_s: float | None) -> EnvevoObservation:
        task = self._state.task or ""
        if self._trial is None:
            why = f"ended after {self._idle_timeout:g}s idle" if self._idled else "none running"
            return EnvevoObservation(task=task, done=True, output=f"(no episode: {why}; reset first)")
        self._state.step_count += 1
        if action.submit:
            return self._submit(task)
        if not action.command:
            return EnvevoObservation(task=task, output="(no command)")
        try:
            code, output = shared_client(self._python).exec(self._trial, action.command, int(timeout_s or self._timeout))
        except LiveTrialFailed as exc:
            return EnvevoObservation(task=task, output=f"(not run: {exc})")
        if len(output) > self._max_output:
            output = output[: self._max_output] + "\n... [truncated]"
        return EnvevoObservation(task=task, output=output, exit_code=code)

    def _submit(self, task: str) -> EnvevoObservation:
        with self._lock:
            trial, self._trial = self._trial, None
        assert trial is not None
        try:
            self.outcome = shared_client(self._python).finish(trial)
        except LiveTrialFailed as exc:
            return EnvevoObservation(task=task, done=True, output=f"(not verified: {exc})")
        kind = self.outcome.error_kind
        # A sandbox failure that is not the policy's doing gets no reward (None), not a false 0.
        reward = None if kind in _NOT_THE_POLICY else float(self.outcome.reward or 0.0)
        return EnvevoObservation(task=task, done=True, reward=reward, output=f"verified: {kind.value}",
                                 metadata={"error_kind": kind.value})

    def _drop(self) -> None:
        with self._lock:
            trial, self._trial = self._trial, None
        if trial is not None:
            try:
                shared_client(self._python).cancel(trial)
            except LiveTrialFailed:
                pass

    def close(self) -> None:
        """The session ended (a close message, a disconnect): its sandbox goes."""
        self._busy()
        self._drop()


def create_export_app(export_dir: str | os.PathLike[str], *, env: str = DEFAULT_ENGINE, max_sessions: int = 8,
                      idle_timeout: float = 300, python: str | None = None, timeout_sec: int = 180) -> Any:
    """OpenEnv's FastAPI app serving the rl export EXPORT_DIR (every row checked against its export hash)."""
    rows = read_export_index(export_dir)
    check_tasks(SERVER, task_configs(r["task_dir"] for r in rows))  # what each task needs, this server must honour
    factory = functools.partial(EnvevoTaskEnvironment, rows, itertools.count(), env=env, python=python,
                                timeout_sec=timeout_sec, idle_timeout=idle_timeout)
    return create_fastapi_app(factory, EnvevoAction, EnvevoObservation, env_name="envevo", state_cls=EnvevoState,
                              concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions))


def serve(export_dir: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 8000,
          announce: Callable[[str], None] | None = None, **options: Any) -> None:
    """Serve the export until interrupted (the worker removes every sandbox it holds on exit); ``announce`` gets the
    URL once the port and the export were checked."""
    import uvicorn

    check_port(host, port)
    app = create_export_app(export_dir, **options)
    if announce is not None:
        announce(f"http://{host}:{port}")
    uvicorn.run(app, host=host, port=port, log_level="warning")


class EnvevoEnvClient(EnvClient[EnvevoAction, EnvevoObservation, EnvevoState]):
    """OpenEnv's client for this server (``.sync()`` for the synchronous one)."""

    def _step_payload(self, action: EnvevoAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[EnvevoObservation]:
        obs = dict(payload.get("observation") or {})
        obs.update(done=payload.get("done", False), reward=payload.get("reward"))
        observation = EnvevoObservation.model_validate(obs)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> EnvevoState:
        state: EnvevoState = EnvevoState.model_validate(payload)
        return state


__all__ = ["EnvevoAction", "EnvevoEnvClient", "EnvevoObservation", "EnvevoState", "EnvevoTaskEnvironment",
           "check_port", "create_export_app", "serve"]
