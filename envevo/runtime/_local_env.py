"""envevo's own Harbor environment for local engines: one container, driven through the podman or docker CLI.

Harbor's podman and docker environments go through Compose for every task: a build, `compose up`, `compose exec`
per command and `compose down --rmi local` at teardown, which costs several times the container work itself and
rejects `network_mode = "no-network"` on podman. For a Dockerfile or prebuilt-image task none of that is needed:

- build once per environment content (tag `localhost/envevo-cache:<digest>`), reused by every later trial;
- `run -d` with `--network=none` when the task forbids internet, CPU and memory limits, the task's env vars,
  envevo's owner label (so a sweeper can remove what a killed process left);
- exec, cp in, and `rm -f` (SIGKILL) at stop; the cached image stays.

The boundary (docs/sandbox.md): no host directory is mounted into the container, read-write or not, except the
host CA bundle read-only. Logs and artifacts leave as a tar stream that the host extracts itself
(envevo/runtime/_archive.py: regular files and directories only, capped, time-bounded). `quiesce()` ends every
process of the agent once its phase is over; a collect hook after it runs in the restarted container, where
nothing of the agent's runs. The verifier's /logs/verifier is not world-writable.

Harbor plugs it in through `import_path` (see `environment_import_path`). Compose tasks keep Harbor's compose
environments (envevo/runtime/_compose_env.py).
"""

from __future__ import annotations

import asyncio
import fnmatch
import shlex
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult, SandboxBuildFailedError
from harbor.environments.capabilities import EnvironmentCapabilities, EnvironmentResourceCapabilities
from harbor.models.trial.paths import EnvironmentPaths

from envevo.runtime import _archive, _cleanup, _host_ca
from envevo.runtime._engine_cli import _run
from envevo.runtime._image_cache import CACHE_LABEL, build_cached_image

# What a trial records about its sandbox (limits dropped, image used), beside Harbor's own logs.
NOTES_FILE = "envevo-notes.txt"
BUILD_LOG = "build.log"


class LocalContainerEnvironment(BaseEnvironment):
    """A Harbor environment backed by one local container. Subclasses name the engine."""

    engine: str = "podman"

    def __init__(self, *args: Any, **kwargs: Any):
        self._container: str | None = None
        self._notes: list[str] = []
        self._stopped = False  # quiesced: the container exists, none of its processes runs
        self._budget = _archive.CopyBudget()
        # Never bind the trial's log dirs to the host: container root could plant a link there that a host-side
        # write by name follows (a host write as root), or a FIFO that a host read blocks on. They are copied out.
        kwargs["auto_mounting"] = False
        super().__init__(*args, **kwargs)

    # -- what this environment is ---------------------------------------------------------------

    @staticmethod
    def type() -> str:
        return "envevo-local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True, mounted=False)

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
            # The host CA's trust, when on, is part of every cached build (envevo/runtime/_image_cache.py).
            ok, tag, output = await build_cached_image(self.engine, self.environment_dir, force=force_build)
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
        """The caller's explicit mounts: read-only binds and volumes only; a writable host bind is refused."""
        args = []
        for m in self._host_mounts:
            if m.get("type") == "bind" and not m.get("read_only"):
                raise ValueError(f"refusing a writable host mount of {m['source']} at {m['target']}: container root "
                                 "would write the host (mount it read-only, or copy files in)")
            if m.get("type") in ("bind", "volume"):
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
        await self.ensure_dirs(self._mount_targets(writable_only=True))

    async def stop(self, delete: bool) -> None:
        if self._container is None:
            return
        name, self._container = self._container, None
        # Shielded and waited for through any cancel: a Ctrl-C that lands here (Harbor stops the sandbox at every
        # trial's end) must not kill `rm` halfway, nor leave it to asyncio.run's final cancel of stray tasks.
        await _run(*self._rm_argv(name), timeout=120, finish_on_cancel=True)

    async def quiesce(self) -> None:
        """End every process in the container, keeping its filesystem: the agent's phase is over.

        Nothing the agent left running (a daemon rewriting files) can act after this. A later command (a collect
        hook) restarts it first (`_thaw`); copies read the stopped container."""
        if self._container is None or self._stopped:
            return
        code, _, err = await _run(*self._stop_argv(self._container), timeout=120, finish_on_cancel=True)
        if code != 0:
            raise RuntimeError(f"{self.engine} stop failed: {err.strip()[-300:]}")
        self._stopped = True
        self._note("agent processes ended after the agent phase (the container was stopped)")

    def _rm_argv(self, name: str) -> list[str]:
        # SIGKILL at once: the sandbox is disposable and its PID 1 (`sleep infinity`) ignores SIGTERM.
        return [self.engine, "rm", "-f", "--time", "0", name] if self.engine == "podman" else [self.engine, "rm", "-f", name]

    def _stop_argv(self, name: str) -> list[str]:
        return [self.engine, "stop", "--time" if self.engine == "podman" else "-t", "0", name]

    async def _thaw(self) -> None:
        """A quiesced sandbox asked to run a command (a collect hook): start it again, with none of the agent's
        processes. Not a snapshot: committing a sparse giant the agent left costs minutes. What starts now runs the
        agent's own files, like the hook itself does, so a hook is as trustworthy as those files (docs/sandbox.md)."""
        code, _, err = await _run(self.engine, "start", self._require(), timeout=120, finish_on_cancel=True)
        if code != 0:
            raise RuntimeError(f"{self.engine} start failed: {err.strip()[-300:]}")
        self._stopped = False
        self._note("commands after the agent phase ran in the restarted agent container, none of its processes left")

    # -- commands and files ---------------------------------------------------------------------

    def _require(self) -> str:
        if self._container is None:
            raise RuntimeError("the environment is not started")
        return self._container

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        if self._stopped:
            await self._thaw()
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

    async def _copy_out(self, source: str, target: Path, *, single_file: bool,
                        keep: Callable[[str], bool] | None = None) -> None:
        report = await asyncio.to_thread(_archive.copy_out, self.engine, self._require(), source, target,
                                         single_file=single_file, budget=self._budget, keep=keep)
        for line in report.notes(source):
            self._note(line)
        if report.error is not None:
            raise RuntimeError(f"{self.engine} cp {source} failed: {report.error}")
        if single_file and report.files == 0:  # a link, FIFO or giant where a file was asked for
            raise RuntimeError(f"{source} was not copied: {report.stopped or '; '.join(report.dropped) or 'empty archive'}")

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await self._copy_out(source_path, Path(target_path), single_file=True)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False)

    async def download_dir_with_exclusions(self, *, source_dir: str, target_dir: Path | str,
                                           exclude: list[str]) -> None:
        # Harbor's own version packs with the container's tar; this one reads the archive the engine makes.
        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False,
                             keep=lambda rel: not _matches(rel, exclude))

    async def download_dir_filtered(self, *, source_dir: str, target_dir: Path | str,
                                    include: Sequence[str] | None = None, exclude: Sequence[str] | None = None,
                                    protect: Sequence[str] | None = None) -> None:
        def keep(rel: str) -> bool:
            if rel in (protect or ()):
                return True
            return (not include or _matches(rel, include)) and not _matches(rel, exclude or ())

        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False, keep=keep)

    async def is_dir(self, path: str, user: str | int | None = None) -> bool:
        # From the archive's first header: no command runs in the container, which may be stopped.
        return bool(await asyncio.to_thread(_archive.peek_is_dir, self.engine, self._require(), path))

    # -- the directories Harbor prepares --------------------------------------------------------

    async def ensure_dirs(self, dirs: Sequence[Any], *, chmod: bool = True) -> ExecResult | None:
        return await self._prepare_dirs(dirs, chmod=chmod, empty=False)

    async def empty_dirs(self, dirs: Sequence[Any], *, chmod: bool = True) -> ExecResult | None:
        return await self._prepare_dirs(dirs, chmod=chmod, empty=True)

    async def _prepare_dirs(self, dirs: Sequence[Any], *, chmod: bool, empty: bool) -> ExecResult | None:
        """Harbor's directory preparation, except that the verifier's log dir is never world-writable.

        Harbor opens /logs/verifier to every user (mode 777) so a non-root verifier can write its reward; then
        any code the tests run (an agent's build, as `nobody`) can write a reward too. Here it belongs to the
        verifier's user, mode 755. Other dirs keep Harbor's treatment; a copied artifact tree brings its own modes."""
        if not dirs:
            return None
        verifier = str(EnvironmentPaths.for_os(self.os).verifier_dir)
        others = [d for d in dirs if str(d) != verifier]
        commands = []
        if others:
            build = self._empty_dirs_command if empty else self._ensure_dirs_command
            commands.append(build(others, chmod=chmod and all(str(d).startswith("/logs/") for d in others)))
        if len(others) < len(dirs):
            q = shlex.quote(verifier)
            owner = self._resolve_user(self.default_user)
            commands.append((f"rm -rf {q}; " if empty else f"[ -L {q} ] && rm -f {q}; ")
                            + f"mkdir -p {q} && chown {shlex.quote(str(owner or 0))} {q} && chmod 755 {q}")
        return await self.exec(" && ".join(f"{{ {c}; }}" for c in commands), user="root")


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.rsplit("/", 1)[-1], p) for p in patterns)


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
