"""envevo's own Harbor environment for local engines: one container, driven through the podman or docker CLI.

Harbor's podman and docker environments go through Compose for every task: a build, `compose up`, `compose exec`
per command and `compose down --rmi local` at teardown, which costs several times the container work itself and
rejects `network_mode = "no-network"` on podman. For a Dockerfile or prebuilt-image task none of that is needed:

- build once per environment content (tag `localhost/envevo-cache:<digest>`), reused by every later trial;
- `run -d` with `--network=none` when the task forbids internet, CPU and memory limits, the task's env vars,
  envevo's owner label (so a sweeper can remove what a killed process left);
- exec, cp in and out, and `rm -f` (SIGKILL) at stop; the cached image stays.

Harbor plugs it in through `import_path` (see `environment_import_path`). Compose tasks keep Harbor's compose
environments (envevo/runtime/_compose_env.py).
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import uuid
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult, SandboxBuildFailedError
from harbor.environments.capabilities import EnvironmentCapabilities, EnvironmentResourceCapabilities

from envevo.runtime import _cleanup, _host_ca
from envevo.runtime._image_cache import CACHE_LABEL, build_cached_image

# What a trial records about its sandbox (limits dropped, image used), beside Harbor's own logs.
NOTES_FILE = "envevo-notes.txt"
BUILD_LOG = "build.log"


async def _run(*argv: str, timeout: float | None = None, stdin: bytes | None = None,
               finish_on_cancel: bool = False) -> tuple[int, str, str]:
    """Run an engine command; (exit code, stdout, stderr). A timeout kills the client and raises TimeoutError.

    A cancel kills the client, unless `finish_on_cancel`: a `run` or `rm` killed halfway leaves a container
    behind (created, or still up), so those run to their end (see `_run_to_end`) and the cancel is re-raised."""
    if finish_on_cancel:
        return await _run_to_end(list(argv), timeout or 120, stdin)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except (TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def _run_blocking(argv: list[str], timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
    try:
        # Its own session: a terminal's Ctrl-C (sent to the whole foreground group) must not kill it halfway.
        r = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"{argv[0]} {argv[1]} did not finish within {timeout:.0f} s") from exc
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


async def _run_to_end(argv: list[str], timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
    """Run a command in a worker thread and wait for it through any cancel, then re-raise the cancel.

    Not an asyncio subprocess: Harbor shields the stop of a sandbox and lets it run on when its trial is cancelled
    at that moment, so asyncio.run's final cancel of stray tasks can reach a stop; an asyncio child process
    cancelled then was seen to hang the interpreter's exit with the container still up (Ctrl-C during red-team
    trials, whose sandboxes stop often). A thread is not cancelled, its future is not a task, and the executor is
    joined before the process exits."""
    done = asyncio.get_running_loop().run_in_executor(None, _run_blocking, argv, timeout, stdin)
    cancelled: asyncio.CancelledError | None = None
    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    return done.result()


class LocalContainerEnvironment(BaseEnvironment):
    """A Harbor environment backed by one local container. Subclasses name the engine."""

    engine: str = "podman"

    def __init__(self, *args: Any, **kwargs: Any):
        self._container: str | None = None
        self._notes: list[str] = []
        # Bind the trial's log dirs (/logs/agent, /logs/verifier, /logs/artifacts) to the host: Harbor then reads
        # them in place instead of copying each out after every phase, which is most of a trial's engine calls.
        kwargs.setdefault("auto_mounting", True)
        super().__init__(*args, **kwargs)

    # -- what this environment is ---------------------------------------------------------------

    @staticmethod
    def type() -> str:
        return "envevo-local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True, mounted=True)

    @classmethod
    def resource_capabilities(cls) -> EnvironmentResourceCapabilities:
        return EnvironmentResourceCapabilities(cpu_limit=True, memory_limit=True, fractional_cpus=True)

    @property
    def _dockerfile(self) -> Path:
        return self.environment_dir / "Dockerfile"

    def _validate_definition(self) -> None:
        if not self._dockerfile.is_file() and not self.task_env_config.docker_image:
            raise FileNotFoundError(
                f"{self.environment_dir} has no Dockerfile and the task names no docker_image; "
                "add environment/Dockerfile or set [environment] docker_image"
            )

    @property
    def _env_log_dir(self) -> Path:
        return self.trial_paths.trial_dir / "environment" / self.session_id.rsplit("__", 1)[-1]

    def _note(self, text: str) -> None:
        self._notes.append(text)
        self._env_log_dir.mkdir(parents=True, exist_ok=True)
        (self._env_log_dir / NOTES_FILE).write_text("\n".join(self._notes) + "\n")

    # -- lifecycle ------------------------------------------------------------------------------

    async def _image(self, force_build: bool) -> str:
        if self._dockerfile.is_file():
            log = self._env_log_dir / BUILD_LOG
            ok, tag, output = await build_cached_image(self.engine, self.environment_dir, force=force_build,
                                                       extra_args=_host_ca.volume_args())
            if output:
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(output)
            if not ok:
                last = next((line for line in reversed(output.splitlines()) if line.strip()), "no output")
                raise SandboxBuildFailedError(f"building {self.environment_dir} failed: {last.strip()[:300]} (log: {log})")
            return tag
        image = str(self.task_env_config.docker_image)
        code, _, _ = await _run(self.engine, "image", "exists", image, timeout=60)
        if code != 0:
            code, _, err = await _run(self.engine, "pull", "-q", image, timeout=600)
            if code != 0:
                raise SandboxBuildFailedError(f"cannot pull {image}: {err.strip()[-300:]}")
        return image

    def _limit_args(self) -> list[str]:
        args = []
        cpus = self._resource_limit_value("cpu", auto_mode=self._auto_mode())
        memory = self._resource_limit_value("memory", auto_mode=self._auto_mode())
        if cpus:
            args += ["--cpus", str(cpus)]
        if memory:
            args += ["--memory", f"{int(memory)}m"]
        return args

    @staticmethod
    def _auto_mode():
        from harbor.models.trial.config import ResourceMode

        return ResourceMode.LIMIT

    def _mount_args(self) -> list[str]:
        args = []
        for m in self._host_mounts:
            if m.get("type") == "bind":
                Path(m["source"]).mkdir(parents=True, exist_ok=True)
                args += ["--volume", f"{m['source']}:{m['target']}" + (":ro" if m.get("read_only") else "")]
            elif m.get("type") == "volume":
                args += ["--volume", f"{m['source']}:{m['target']}" + (":ro" if m.get("read_only") else "")]
        return args

    async def start(self, force_build: bool) -> None:
        image = await self._image(force_build)
        name = f"envevo-{self.session_id}-{uuid.uuid4().hex[:6]}".lower()
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:120]
        base = [self.engine, "run", "-d", "--name", name, "--label", f"{_cleanup.OWNER_LABEL}={_cleanup.owner_id()}",
                "--pull=never" if self.engine == "podman" else "--pull=missing"]
        if self._network_disabled:
            base.append("--network=none")
        for key, value in {**_host_ca.ca_env(), **self._startup_env()}.items():
            base += ["--env", f"{key}={value}"]
        rest = [*self._mount_args(), *_host_ca.volume_args(), image, "sh", "-c", "sleep infinity"]
        limits = self._limit_args()
        # Known before `run` creates it: a cancel from here on still ends in stop() removing it by name.
        self._container = name
        _cleanup.ensure_exit_sweep()
        code, out, err = await _run(*base, *limits, *rest, timeout=300, finish_on_cancel=True)
        if code != 0 and limits and ("cgroup" in err.lower() or "permission" in err.lower() or "not supported" in err.lower()):
            # The host refuses resource limits (e.g. cgroup v1 without the controllers): run without them, say so.
            self._note(f"resource limits {' '.join(limits)} dropped: the host refused them ({err.strip().splitlines()[-1][:200]})")
            await _run(*self._rm_argv(name), timeout=60, finish_on_cancel=True)
            code, out, err = await _run(*base, *rest, timeout=300, finish_on_cancel=True)
        if code != 0:
            self._container = None
            await _run(*self._rm_argv(name), timeout=60, finish_on_cancel=True)
            raise RuntimeError(f"{self.engine} run failed: {err.strip()[-400:]}")
        if image != str(self.task_env_config.docker_image or ""):
            self._note(f"image {image} (environment/Dockerfile, cached by content)")
        await self._upload_environment_dir_after_start()
        bound = {m["target"] for m in self._host_mounts if m.get("type") == "bind"}
        unbound = [t for t in self._mount_targets(writable_only=True) if t not in bound]
        if unbound:  # bind-mounted dirs exist already, and Harbor opens their host side to every user
            await self.ensure_dirs(unbound)

    async def stop(self, delete: bool) -> None:
        if self._container is None:
            return
        name, self._container = self._container, None
        # Shielded and waited for through any cancel: a Ctrl-C that lands here (Harbor stops the sandbox at every
        # trial's end) must not kill `rm` halfway, nor leave it to asyncio.run's final cancel of stray tasks.
        await _run(*self._rm_argv(name), timeout=120, finish_on_cancel=True)

    def _rm_argv(self, name: str) -> list[str]:
        # SIGKILL at once: the sandbox is disposable and its PID 1 (`sleep infinity`) ignores SIGTERM.
        return [self.engine, "rm", "-f", "--time", "0", name] if self.engine == "podman" else [self.engine, "rm", "-f", name]

    # -- commands and files ---------------------------------------------------------------------

    def _require(self) -> str:
        if self._container is None:
            raise RuntimeError("the environment is not started")
        return self._container

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        argv = [self.engine, "exec", "-i"]
        workdir = cwd or self.task_env_config.workdir
        if workdir:
            argv += ["--workdir", workdir]
        for key, value in (self._merge_env(env) or {}).items():
            argv += ["--env", f"{key}={value}"]
        who = self._resolve_user(user)
        if who is not None:
            argv += ["--user", str(who)]
        # A marker in the command's environment, inherited by all it starts, so a timeout can kill the whole tree:
        # killing the engine's client alone leaves the command running in the container.
        marker = f"ENVEVO_EXEC={uuid.uuid4().hex}"
        argv += ["--env", marker, self._require(), "bash", "-c", command]
        try:
            code, out, err = await _run(*argv, timeout=timeout_sec or None, stdin=b"")
        except TimeoutError:
            await self._kill_marked(marker)
            # Harbor's environments raise on a timed-out command; the agent or verifier maps it to its own timeout.
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        return ExecResult(stdout=out or None, stderr=err or None, return_code=code)

    async def _kill_marked(self, marker: str) -> None:
        script = (f'for p in /proc/[0-9]*; do grep -qsa "{marker}" "$p/environ" 2>/dev/null && '
                  'kill -9 "${p#/proc/}" 2>/dev/null; done; true')
        try:
            await _run(self.engine, "exec", "--user", "0", self._require(), "sh", "-c", script, timeout=60)
        except (TimeoutError, RuntimeError):
            pass  # the container is going away or wedged; stop() removes it either way

    async def _cp(self, source: str, target: str) -> None:
        code, out, err = await _run(self.engine, "cp", source, target, timeout=600)
        if code != 0:
            raise RuntimeError(f"{self.engine} cp {source} {target} failed: {(err or out).strip()[-300:]}")

    async def _cp_in(self, source: str, target: str, make_dir: str) -> None:
        # `cp` creates the target itself when its parent exists, the usual case (/tests, /solution): try that
        # first and create the parents only when it fails, which saves an engine call per upload.
        try:
            await self._cp(source, f"{self._require()}:{target}")
        except RuntimeError:
            await self.exec(f"mkdir -p {shlex.quote(make_dir)}", user="root", timeout_sec=60)
            await self._cp(source, f"{self._require()}:{target}")

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._cp_in(str(source_path), target_path, str(Path(target_path).parent))

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._cp_in(f"{Path(source_dir)}/.", target_dir, target_dir)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await self._cp(f"{self._require()}:{source_path}", str(target_path))

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        await self._cp(f"{self._require()}:{source_dir.rstrip('/')}/.", str(target_dir))


class PodmanLocalEnvironment(LocalContainerEnvironment):
    engine = "podman"

    @staticmethod
    def type() -> str:
        return "envevo-podman"


class DockerLocalEnvironment(LocalContainerEnvironment):
    engine = "docker"

    @staticmethod
    def type() -> str:
        return "envevo-docker"


__all__ = ["CACHE_LABEL", "DockerLocalEnvironment", "LocalContainerEnvironment", "PodmanLocalEnvironment"]
