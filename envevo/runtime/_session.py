"""A sandbox session: start a task's environment, run commands in it one after another, stop it.

It is the one primitive above a trial. The Modifier's shell and the exploit agents use it, so they work wherever
verification works: the environment is built by the same selection as a trial's (`resolve_env`), local or cloud,
and it keeps its state between commands. The task's own network policy applies unless the caller asks for none.

    async with open_session(task_dir, env="podman", upload={"solution": "/solution"}) as s:
        result = await s.exec("bash /solution/solve.sh")
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from pydantic import BaseModel

from envevo.errors import TaskError
from envevo.runtime._engine_dialect import DEFAULT_ENGINE
from envevo.runtime._envs import resolve_env
from envevo.task import host_env_resolved


class SessionResult(BaseModel):
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def output(self) -> str:
        return self.stdout + (("\n" if self.stdout and self.stderr else "") + self.stderr if self.stderr else "")


class SessionError(Exception):
    """The sandbox could not be started (no environment definition, a failing build); the message says why."""


class SandboxSession:
    """A started environment. Commands run in order; state (files, processes) persists between them."""

    def __init__(self, environment, workdir: Path):
        self._env = environment
        self._workdir = workdir
        self._lock = asyncio.Lock()  # one command at a time: a shell, not a process pool

    async def exec(self, command: str, *, timeout_sec: float = 300, user: str | int | None = None,
                   cwd: str | None = None) -> SessionResult:
        async with self._lock:
            try:
                r = await self._env.exec(command, timeout_sec=max(1, int(timeout_sec)), user=user, cwd=cwd)
            except RuntimeError as exc:
                if "timed out" in str(exc):
                    return SessionResult(exit_code=None, stderr=str(exc), timed_out=True)
                raise
        return SessionResult(exit_code=r.return_code, stdout=r.stdout or "", stderr=r.stderr or "")

    async def upload(self, source: Path, target: str) -> None:
        async with self._lock:
            if source.is_dir():
                await self._env.upload_dir(source, target)
            else:
                await self._env.upload_file(source, target)

    async def download(self, source: str, target: Path) -> None:
        async with self._lock:
            await self._env.download_file(source, target)


def _environment(task_dir: Path, env: str, workdir: Path, network: bool | None):
    # Harbor is imported only when a session really starts.
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.task.config import NetworkMode, NetworkPolicy, TaskConfig
    from harbor.models.trial.paths import TrialPaths

    from envevo.runtime import _cleanup
    from envevo.runtime._quota_env import environment_config

    config = TaskConfig.model_validate_toml((task_dir / "task.toml").read_text())
    env_config = config.environment
    choice = resolve_env(env, task_dir)
    extra = [_cleanup.overlay_compose_file()] if choice.compose else []
    trial_env = environment_config(choice, env, extra)  # under the run's quota, like every trial's sandbox
    if network is None:
        policy = env_config.resolve_baseline()
    else:
        policy = NetworkPolicy(network_mode=NetworkMode.PUBLIC if network else NetworkMode.NO_NETWORK)
    paths = TrialPaths(trial_dir=workdir)
    paths.mkdir()
    return EnvironmentFactory.create_environment_from_config(
        config=trial_env,
        environment_dir=task_dir / "environment",
        environment_name=task_dir.name,
        session_id=f"{task_dir.name}__session-{uuid.uuid4().hex[:8]}",
        trial_paths=paths,
        task_env_config=env_config,
        network_policy=policy,
    )


@contextlib.asynccontextmanager
async def open_session(task_dir: Path, env: str = DEFAULT_ENGINE, *, upload: Mapping[str, str] | None = None,
                       network: bool | None = None, logs_dir: Path | None = None,
                       start_timeout_sec: float = 1800) -> AsyncIterator[SandboxSession]:
    """Start `task_dir`'s environment; `upload` maps task subfolders (e.g. "tests") to sandbox paths.

    The sandbox is stopped on exit, also on cancellation (the stop is shielded), and labelled with this process,
    so a killed process's sandboxes are swept by the next run."""
    task_dir = Path(task_dir).resolve()
    if not (task_dir / "task.toml").is_file():
        raise SessionError(f"{task_dir} is not a Harbor task dir (no task.toml)")
    workdir = Path(logs_dir) if logs_dir else Path(tempfile.mkdtemp(prefix="envevo-session-"))
    resolved = workdir / ".host-env"  # no host variable reaches Harbor unless passed (envevo.task._host_env)
    try:
        environment = _environment(host_env_resolved(task_dir, resolved), env, workdir, network)
    except (FileNotFoundError, ValueError, ImportError, TaskError) as exc:
        shutil.rmtree(resolved, ignore_errors=True)
        if logs_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        # An environment whose SDK is not installed: Harbor's message says which extra to install, over lines.
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()] or [type(exc).__name__]
        raise SessionError(" ".join(lines[:3]) if isinstance(exc, ImportError) else lines[0]) from None
    try:
        try:
            await asyncio.wait_for(environment.start(force_build=False), start_timeout_sec)
        except TimeoutError:
            raise SessionError(f"the sandbox did not start within {start_timeout_sec:.0f}s") from None
        except Exception as exc:  # a build or start failure, in the environment's own words
            if isinstance(exc, SessionError):
                raise
            raise SessionError(f"{type(exc).__name__}: {exc}"[:2000]) from None
        session = SandboxSession(environment, workdir)
        for sub, target in (upload or {}).items():
            if (task_dir / sub).exists():
                await session.upload(task_dir / sub, target)
        yield session
    finally:
        await asyncio.shield(environment.stop(delete=True))
        shutil.rmtree(resolved, ignore_errors=True)
        if logs_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
