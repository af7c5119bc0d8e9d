"""envevo's own Harbor environment for local engines: one container, driven through the podman or docker CLI.

Harbor's podman and docker environments go through Compose for every task: a build, `compose up`, `compose exec`
per command and `compose down --rmi local` at teardown, which costs several times the container work itself and
rejects `network_mode = "no-network"` on podman. For a Dockerfile or prebuilt-image task none of that is needed:

- build once per environment content (tag `localhost/envevo-cache:<digest>`), reused by every later trial;
- `run -d` with `--network=none` when the task forbids internet, CPU and memory limits, the task's env vars,
  envevo's owner label (so a sweeper can remove what a killed process left);
- exec, cp in, and `rm -f` (SIGKILL) at stop; the cached image stays;
- few engine calls per trial: directory preparation, and Harbor's `chmod +x` of its uploads and reward reset, ride
  on the next command; the copy that tells a file from a directory is the one that extracts it; a quiesced
  container's removal overlaps the verifier's start (benchmarks/README.md, `verify_latency.py --calls`).

The boundary (docs/sandbox.md): no host directory is mounted into the container, read-write or not, except the
host CA bundle read-only. Logs and artifacts leave as a tar stream that the host extracts itself
(envevo/runtime/_archive.py: regular files and directories only, capped, time-bounded). `quiesce()` ends every
process of the agent once its phase is over; a collect hook after it runs in the restarted container, where
nothing of the agent's runs. The verifier's /logs/verifier is not world-writable.

Built in layers, each a private module importing only the ones below it: the state and a command run now
(`_local_exec.py`), the deferred preparation that rides on the next command (`_local_prep.py`), the copies out
(`_local_copy.py`), and here the lifecycle, `exec` and uploads.

Harbor plugs it in through `import_path` (see `environment_import_path`). Compose tasks keep Harbor's compose
environments (envevo/runtime/_compose_env.py).
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from harbor.environments.base import ExecResult, SandboxBuildFailedError
from harbor.environments.capabilities import EnvironmentCapabilities, EnvironmentResourceCapabilities
from harbor.models.task.config import NetworkPolicy

from envevo.runtime import _cleanup, _host_ca
from envevo.runtime._engine_cli import _run
from envevo.runtime._engine_dialect import DOCKER, PODMAN
from envevo.runtime._image_cache import CACHE_LABEL, build_cached_image, forget_cached_image, image_missing
from envevo.runtime._local_copy import CopyingEnvironment
from envevo.runtime._local_exec import NOTES_FILE, _norm, _overlaps
from envevo.runtime._network import join_networks, leave_networks, needs_network_later

BUILD_LOG = "build.log"


class LocalContainerEnvironment(CopyingEnvironment):
    """A Harbor environment backed by one local container. Subclasses name the engine."""

    # -- what this environment is ---------------------------------------------------------------

    @staticmethod
    def type() -> str:
        return "envevo-local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # Per-phase network policy (setup online, agent or verifier offline): the container leaves its networks and
        # joins them again between phases (envevo/runtime/_network.py).
        return EnvironmentCapabilities(disable_internet=True, mounted=False, dynamic_network_policy=True)

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
        image = self._image_ref = await self._image(force_build)
        name = f"envevo-{self.session_id}-{uuid.uuid4().hex[:6]}".lower()
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:120]
        base = [self.engine, "run", "-d", "--name", name, "--label", f"{_cleanup.OWNER_LABEL}={_cleanup.owner_id()}",
                self.dialect.run_pull_flag]
        phases = [p.network_mode.value for p in self._phase_network_policies]
        cut_later = needs_network_later(self._network_policy.network_mode.value, phases)
        if self._network_disabled and not cut_later:
            base.append("--network=none")
        for key, value in {**_host_ca.ca_env(), **self._startup_env()}.items():
            base += ["--env", f"{key}={value}"]
        mounts = [*self._mount_args(), *_host_ca.volume_args()]
        rest = [*mounts, image, "sh", "-c", "sleep infinity"]
        limits = self._limit_args()
        # Known before `run` creates it: a cancel from here on still ends in stop() removing it by name.
        self._container = name
        _cleanup.ensure_exit_sweep()
        code, out, err = await _run(*base, *limits, *rest, timeout=300, finish_on_cancel=True)
        if code != 0 and image_missing(err) and self._dockerfile.is_file():
            # The cached image went away after this run last saw it (a prune, a user's rmi): build it, start again.
            forget_cached_image(image)
            await _run(*self._rm_argv(name), timeout=60, finish_on_cancel=True)
            image = self._image_ref = await self._image(force_build)
            rest = [*mounts, image, "sh", "-c", "sleep infinity"]
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
        if cut_later:  # offline now, online in a later phase: on the default network, left at once
            self._left_networks = await leave_networks(self.engine, name)
        if image != str(self.task_env_config.docker_image or ""):
            self._note(f"image {image} (environment/Dockerfile, cached by content)")
        await self._upload_environment_dir_after_start()
        await self.ensure_dirs(self._mount_targets(writable_only=True))

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """Harbor's switch between phases: leave every network for `no-network`, join them again for `public`
        (an allowlist is refused before any trial: `capabilities` has no network_allowlist)."""
        if self._container is None:
            return  # not started: `start` reads the policy
        offline = network_policy.network_mode.value == "no-network"
        if offline and not self._network_disabled:
            self._left_networks = await leave_networks(self.engine, self._container)
        elif not offline and self._network_disabled:
            if not self._left_networks:
                raise RuntimeError(f"the {network_policy.network_mode.value} phase needs the network, and this "
                                   "container started without one")
            await join_networks(self.engine, self._container, self._left_networks)
            self._left_networks = []

    async def stop(self, delete: bool) -> None:
        try:
            await self._fetch_late()
        finally:
            await self._remove()

    async def _remove(self) -> None:
        self._stopping = True
        stash, self._logs_copy = self._logs_copy, None
        if stash is not None:  # here, not in a worker thread: no cancel point before the container's removal
            shutil.rmtree(stash, ignore_errors=True)
        self._release()
        self._pending.clear()
        if self._container is None:
            return
        name, self._container = self._container, None
        # Shielded and waited for through any cancel: a Ctrl-C that lands here (Harbor stops the sandbox at every
        # trial's end) must not kill `rm` halfway, nor leave it to asyncio.run's final cancel of stray tasks.
        removal = _run(*self._rm_argv(name), timeout=120, finish_on_cancel=True)
        if self._stopped:
            # Quiesced: nothing runs in it, so its removal need not hold up the separate verifier's start. The
            # trial waits for it at its end (`removed`).
            self._removal = asyncio.ensure_future(removal)
            return
        await removal

    async def removed(self) -> None:
        """Wait for the removal `stop` left running."""
        if self._removal is not None:
            await asyncio.shield(self._removal)

    async def quiesce(self, unneeded: Sequence[str] = ()) -> None:
        """End every process in the container, keeping its filesystem: the agent's phase is over.

        Nothing the agent left running (a daemon rewriting files) can act after this. A later command (a collect
        hook) restarts it first (`_thaw`); copies read the stopped container. `unneeded`: dirs nothing reads here
        any more, so an upload into them while stopped is skipped (Harbor copies the agent's logs back in)."""
        if self._container is None or self._stopped:
            return
        self._release()
        await self._settle()
        code, _, err = await _run(*self._stop_argv(self._container), timeout=120, finish_on_cancel=True)
        if code != 0:
            raise RuntimeError(f"{self.engine} stop failed: {err.strip()[-300:]}")
        self._stopped = True
        self._unneeded = {_norm(p) for p in unneeded}
        self._note("agent processes ended after the agent phase (the container was stopped)")

    def _rm_argv(self, name: str) -> list[str]:
        return self.dialect.rm(name)

    def _stop_argv(self, name: str) -> list[str]:
        return self.dialect.stop(name)

    # -- commands and files ---------------------------------------------------------------------

    def _require(self) -> str:
        if self._container is None:
            raise RuntimeError("the environment is not started")
        return self._container

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        self._release()
        who = self._resolve_user(user)
        chore = self._chore(command)
        as_root = bool(chore or self._pending) and await self._as_root(who)
        if chore and as_root:
            # Harbor's `chmod +x` of a script it uploaded, or its removal of stale rewards (in a /logs/verifier the
            # preparation made anew): they ride on the next command, still before it. Harbor ignores the first's
            # result; the second cannot fail as root.
            self._pending.append((chore, command))
            return ExecResult(return_code=0)
        prep = self._take_pending()
        if prep and as_root:
            # Root's command carries the deferred preparation: one engine call, not two. Its output and status
            # stay out of the command's, as callers ignored them when it ran alone.
            command = f"{{ {prep}; }} >/dev/null 2>&1; {command}"
        elif prep:
            await self._exec_now(prep, cwd=None, env=None, timeout_sec=None, who="root")
        return await self._exec_now(command, cwd=cwd, env=env, timeout_sec=timeout_sec, who=who)

    async def _cp(self, source: str, target: str) -> None:
        code, out, err = await _run(self.engine, "cp", source, target, timeout=600)
        if code != 0:
            raise RuntimeError(f"{self.engine} cp {source} {target} failed: {(err or out).strip()[-300:]}")

    async def _cp_in(self, source: str, target: str, make_dir: str) -> None:
        self._release()
        await self._drop_logs_copy()
        if any(_overlaps(target, d) for dirs, _ in self._pending for d in dirs):
            await self._settle()  # the target is prepared (emptied, made) first
        self._uploaded.add(target)
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
        if self._stopped and _norm(target_dir) in self._unneeded:
            return  # a copy into a stopped container that nothing reads before it is removed
        if not any(Path(source_dir).iterdir()) and any(_norm(target_dir) in map(_norm, d) for d, _ in self._pending):
            return  # an empty dir into one the pending preparation makes: nothing to copy
        await self._cp_in(f"{Path(source_dir)}/.", target_dir, target_dir)


class PodmanLocalEnvironment(LocalContainerEnvironment):
    dialect = PODMAN
    engine = PODMAN.name

    @staticmethod
    def type() -> str:
        return "envevo-podman"


class DockerLocalEnvironment(LocalContainerEnvironment):
    dialect = DOCKER
    engine = DOCKER.name

    @staticmethod
    def type() -> str:
        return "envevo-docker"


__all__ = ["CACHE_LABEL", "NOTES_FILE", "DockerLocalEnvironment", "LocalContainerEnvironment", "PodmanLocalEnvironment"]
