"""envevo's bubblewrap environment (`--env bwrap`): the local environment's trial loop, without a container per trial.

The image is built and cached by podman exactly as for `--env podman`; a trial's sandbox is then a bubblewrap
sandbox over the image's read-only root file system with a copy-on-write layer of its own
(envevo/runtime/_bwrap_sandbox.py): started in milliseconds, and every command, copy in and copy out a `bwrap`
process instead of a podman CLI call. Everything above the engine calls is the local environment's own
(envevo/runtime/_local_env.py and its layers): the deferred preparation, the held copies, /logs copied once, the
verifier's 755 log dir, quiesce before evidence is read. The boundary is the same: no host dir mounted, copies out as
a tar stream made inside a sandbox of its own and extracted by envevo/runtime/_archive.py's rules, evidence read
after every process of the agent has ended (`quiesce` kills the sandbox's pid namespace).

It serves tasks without compose and without network in any phase (`--unshare-net` can only give "no network");
envevo/runtime/_envs.py sends the others to podman and says so once.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from harbor.environments.base import ExecResult
from harbor.models.task.config import NetworkPolicy

from envevo.runtime import _archive, _cleanup
from envevo.runtime._bwrap_sandbox import BwrapSandbox, sweep_stale
from envevo.runtime._engine_cli import _run, run_to_exit
from envevo.runtime._engine_dialect import BWRAP, PODMAN
from envevo.runtime._image_cache import forget_cached_image, image_missing
from envevo.runtime._local_env import LocalContainerEnvironment
from envevo.runtime._local_exec import EXEC_OUTPUT_LIMIT, _overlaps

_LOWER: dict[str, str] = {}  # image ref -> its read-only root file system (podman image mount), per process
_PINS: dict[str, str] = {}  # image ref -> the never-started container whose mount that is
_CONFIG: dict[str, tuple[list[str], str, str]] = {}  # image ref -> (its env, its working dir, its user)
_LOCKS: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}  # one per event loop (tests run several)
_SWEPT: list[bool] = []


async def _image_root(image: str) -> str:
    """The image's root file system, read-only, once per image and process (no byte copied): the mount of a container
    created from it and never started. The container pins the image (envevo's image budget and `podman rmi` skip an
    image a container uses, not a mounted one) and carries envevo's owner label, so it goes at exit or in the sweep
    of a killed process's leftovers. An image already gone raises ImageGone."""
    async with _LOCKS.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
        if image in _LOWER and not os.path.ismount(_LOWER[image]):
            del _LOWER[image]  # unmounted since (`podman umount`): mounted again, never an empty dir
        if image not in _LOWER:
            name = f"envevo-{BWRAP.name}-image-{uuid.uuid4().hex[:12]}"
            _cleanup.ensure_exit_sweep()
            code, _, err = await _run(PODMAN.name, "create", "--name", name, "--label",
                                      f"{_cleanup.OWNER_LABEL}={_cleanup.owner_id()}", PODMAN.run_pull_flag, image,
                                      "true", timeout=120, finish_on_cancel=True)
            if code != 0:
                raise (ImageGone if image_missing(err) else RuntimeError)(
                    f"{PODMAN.name} create {image} failed: {err.strip()[-300:]}")
            code, out, err = await _run(PODMAN.name, "mount", name, timeout=120)
            if code != 0 or not out.strip():
                raise RuntimeError(f"{PODMAN.name} mount of {image} failed: {err.strip()[-300:]}")
            _LOWER[image] = out.strip().splitlines()[-1]
            _PINS[image] = name
        return _LOWER[image]


def release_image_roots() -> None:
    """Unmount and remove this process's image pins now, instead of at exit: for a long-lived process (a test worker,
    a library caller) that is done with bwrap and counts its own containers. The next bwrap trial pins again."""
    names = list(_PINS.values())
    _PINS.clear()
    _LOWER.clear()
    if names:
        subprocess.run([PODMAN.name, "umount", *names], capture_output=True, timeout=120)
        subprocess.run(PODMAN.rm(*names), capture_output=True, timeout=120)


class ImageGone(RuntimeError):
    """The cached image was removed from outside this run since it was last seen."""


async def _image_config(image: str) -> tuple[list[str], str, str]:
    """The image's environment (KEY=VALUE), working dir and user ("" is root; "?" when unknown), as a container
    started from it would have them: one engine call per image and process (a new image each generation)."""
    if image in _CONFIG:
        return _CONFIG[image]
    code, out, _ = await _run(PODMAN.name, "image", "inspect", "--format",
                              "{{json .Config.Env}}\n{{.Config.WorkingDir}}\n{{.Config.User}}", image, timeout=60)
    if code != 0:
        return [], "", "?"
    env_line, workdir, user = (out.split("\n") + ["", ""])[:3]
    _CONFIG[image] = list(json.loads(env_line or "null") or []), workdir.strip(), user.strip()
    return _CONFIG[image]


class BwrapEnvironment(LocalContainerEnvironment):
    """A Harbor environment backed by one bubblewrap sandbox per trial phase; images come from podman."""

    dialect = PODMAN  # builds and holds the images
    engine = PODMAN.name

    @staticmethod
    def type() -> str:
        return f"envevo-{BWRAP.name}"

    _box: BwrapSandbox | None = None

    def _sandbox(self) -> BwrapSandbox:
        box = self._box
        if box is None:
            raise RuntimeError("the environment is not started")
        return box

    async def start(self, force_build: bool) -> None:
        if self._host_mounts:
            raise ValueError(f"--env {BWRAP.name} mounts no host path into a sandbox; use --env {PODMAN.name} for mounts")
        if not self._network_disabled or any(p.network_mode.value != "no-network" for p in self._phase_network_policies):
            raise RuntimeError(f"--env {BWRAP.name} can only give a sandbox no network; this task needs one "
                               f"(run it with --env {PODMAN.name})")
        if not _SWEPT:
            _SWEPT.append(True)
            await asyncio.to_thread(sweep_stale)
        image = self._image_ref = await self._image(force_build)
        try:
            lower = await _image_root(image)
        except ImageGone:
            if not self._dockerfile.is_file():
                raise
            forget_cached_image(image)  # removed since this run last saw it (a prune): built again
            image = self._image_ref = await self._image(force_build)
            lower = await _image_root(image)
        env, workdir, self._user = await _image_config(image)
        self._base_env = dict(e.split("=", 1) for e in env if "=" in e)
        self._base_env.update(self._startup_env())
        self._workdir = workdir
        if self._limit_args():
            self._note(f"resource limits {' '.join(self._limit_args())} not enforced: {BWRAP.name} sets no cgroup limits")
        box = BwrapSandbox(lower)
        self._container = f"{BWRAP.name}-{box.dir.name}"
        self._box = box
        # In this thread (not a worker): bwrap's --die-with-parent and the holder's pdeathsig watch the thread that
        # started them, and the event loop's thread lives as long as the trial.
        box.open(self.task_env_config.workdir or workdir or None)
        self._note(f"image {image} in a {BWRAP.name} sandbox (root file system read-only, a copy-on-write layer per trial)")
        await self._upload_environment_dir_after_start()
        await self.ensure_dirs(self._mount_targets(writable_only=True))

    async def _as_root(self, who: str | int | None) -> bool:
        # The image's user is known from its config (read once with its env and working dir): no engine call.
        return str(self._user if who is None else who).split(":")[0] in ("", "root", "0")

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        if network_policy.network_mode.value != "no-network":
            raise RuntimeError(f"--env {BWRAP.name} cannot give a phase the {network_policy.network_mode.value} "
                               f"network (run the task with --env {PODMAN.name})")

    async def _remove(self) -> None:
        self._stopping = True
        stash, self._logs_copy = self._logs_copy, None
        self._release()
        self._pending.clear()
        box, self._box = self._box, None
        self._container = None
        if box is not None:
            box.close()  # signals and an rmtree of the trial's own upper dir: not cancellable halfway
        if stash is not None:
            shutil.rmtree(stash, ignore_errors=True)

    async def quiesce(self, unneeded: Sequence[str] = ()) -> None:
        """End every process of the sandbox (its pid namespace), keeping its files: the agent's phase is over."""
        if self._container is None or self._stopped:
            return
        self._release()
        await self._settle()
        self._sandbox().kill_init()
        self._stopped = True
        self._unneeded = {str(p).rstrip("/") or "/" for p in unneeded}
        self._note("agent processes ended after the agent phase (the sandbox's pid namespace was killed)")

    async def _thaw(self) -> None:
        self._sandbox().start_init()
        self._stopped = False
        self._note("commands after the agent phase ran in a new pid namespace of the sandbox, none of its processes left")

    # -- commands ---------------------------------------------------------------------------------

    async def _exec_now(self, command: str, *, cwd: str | None, env: dict[str, str] | None,
                        timeout_sec: int | None, who: str | int | None) -> ExecResult:
        await self._drop_logs_copy()
        if self._stopped:
            await self._thaw()
        marker = uuid.uuid4().hex
        argv = self._exec_argv(command, cwd=cwd, env=env, who=who, marker=marker)
        try:
            code, out, err = await run_to_exit(argv, timeout=timeout_sec or None, limit=EXEC_OUTPUT_LIMIT)
        except TimeoutError:
            await self._kill_marked(f"ENVEVO_EXEC={marker}")
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        return ExecResult(stdout=out or None, stderr=err or None, return_code=code)

    def _exec_argv(self, command: str, *, cwd: str | None, env: dict[str, str] | None, who: str | int | None,
                   marker: str | None = None) -> list[str]:
        user = None if who is None or str(who).split(":")[0] in ("", "root", "0") else str(who)
        if who is None and self._user not in ("", "root", "0"):
            user = self._user
        full = {**self._base_env, **(self._merge_env(env) or {})}
        if marker:
            full["ENVEVO_EXEC"] = marker  # inherited by all the command starts: a timeout kills the whole tree
        return self._sandbox().exec_argv(command, user=user, cwd=cwd or self.task_env_config.workdir or self._workdir or None,
                                         env=full)

    async def _kill_marked(self, marker: str) -> None:
        script = (f'for p in /proc/[0-9]*; do grep -qsa "{marker}" "$p/environ" 2>/dev/null && '
                  'kill -9 "${p#/proc/}" 2>/dev/null; done; true')
        try:
            await _run(*self._exec_argv(script, cwd="/", env=None, who="root"), timeout=60)
        except (TimeoutError, RuntimeError):
            pass  # stop() kills the whole pid namespace either way

    # -- copies -----------------------------------------------------------------------------------

    def _new_copy(self, container: str, source: str) -> _archive.Copy:
        del container  # one sandbox per environment
        return _archive.Copy(BWRAP.name, "", source, self._budget.limits.timeout_sec,
                             argv=self._sandbox().copy_out_argv(source))

    async def _cp_in(self, source: str, target: str, make_dir: str) -> None:
        """Host files (the task's tests and solution, extracted artifacts: regular files and dirs) into the sandbox,
        as a tar stream that `tar -x` extracts inside a sandbox of its own: a link the agent made resolves there."""
        del make_dir  # tar makes the parents
        self._release()
        await self._drop_logs_copy()
        if any(_overlaps(target, d) for dirs, _ in self._pending for d in dirs):
            await self._settle()
        self._uploaded.add(target)
        src = Path(source[:-2] if source.endswith("/.") else source)
        arcname = target.strip("/")
        argv = self._sandbox().copy_in_argv()

        def run() -> subprocess.CompletedProcess[bytes]:
            with tempfile.TemporaryFile() as stream:
                with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    if src.is_dir() and not src.is_symlink():
                        for child in sorted(src.iterdir()):
                            tar.add(child, arcname=f"{arcname}/{child.name}", filter=_as_root)
                    else:
                        tar.add(src, arcname=arcname, filter=_as_root)
                stream.seek(0)
                return subprocess.run(argv, stdin=stream, capture_output=True, timeout=600, start_new_session=True)

        result = await asyncio.to_thread(run)
        if result.returncode != 0:
            raise RuntimeError(f"copy of {source} into the {BWRAP.name} sandbox at {target} failed: "
                               f"{result.stderr.decode(errors='replace').strip()[-300:]}")


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isreg() or info.isdir()):
        return None  # the host's own files; a link among them is not carried into a sandbox
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


__all__ = ["BwrapEnvironment"]
