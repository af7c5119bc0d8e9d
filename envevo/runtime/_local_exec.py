"""The bottom layer of envevo's local environment (envevo/runtime/_local_env.py): its state, and a command run now.

Held here because every layer above uses it: the state `__init__` sets (container, notes, copy budget, held copies,
deferred preparation, upload targets), the trial's notes file, `docker|podman exec` with its kill-on-timeout, the
restart of a quiesced container a command needs, and the release of held copies that every next command does
first. Nothing here defers or batches: that is envevo/runtime/_local_prep.py, one layer up.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult

from envevo.runtime import _archive
from envevo.runtime._engine_cli import _run
from envevo.runtime._engine_dialect import PODMAN, EngineDialect

# Bytes kept of each stream of one command run in a sandbox; the rest is read and dropped (a note says how much).
EXEC_OUTPUT_LIMIT = 8 << 20
# What a trial records about its sandbox (limits dropped, image used), beside Harbor's own logs.
NOTES_FILE = "envevo-notes.txt"


def trial_notes(trial_dir: Path) -> list[str]:
    """The local environment's notes for each of a trial's sandboxes (agent, separate verifier)."""
    return [line for f in sorted(trial_dir.glob(f"environment/*/{NOTES_FILE}"))
            for line in f.read_text().splitlines() if line.strip()]


class CommandEnvironment(BaseEnvironment):
    """One local container's state and its commands run one engine call each; LocalContainerEnvironment builds on it."""

    dialect: EngineDialect = PODMAN
    engine: str = PODMAN.name

    def __init__(self, *args: Any, **kwargs: Any):
        self._container: str | None = None
        self._notes: list[str] = []
        self._stopped = False  # quiesced: the container exists, none of its processes runs
        self._budget = _archive.CopyBudget()
        self._held: dict[str, _archive.Copy] = {}  # copies `is_dir` opened, for the downloads that follow
        self._stopping = False  # set by stop(): a copy opened in a worker thread after that is closed at once
        self._pending: list[tuple[list[str], str]] = []  # deferred directory preparation: (dirs, root's command)
        self._unneeded: set[str] = set()  # paths nothing reads in the container once it is quiesced
        self._image_ref = ""
        self._uploaded: set[str] = set()  # upload targets (Harbor makes the scripts among them executable)
        self._removal: asyncio.Future[tuple[int, str, str]] | None = None
        self._left_networks: list[str] = []  # the networks a per-phase `no-network` policy took it off (_network.py)
        self._logs_copy: Path | None = None  # /logs as copied once from the quiesced container (envevo/runtime/_local_copy.py)
        self._late: list[tuple[str, Path]] = []  # downloads that the agent-log copy serves (Harbor's oracle.txt)
        # Never bind the trial's log dirs to the host: container root could plant a link there that a host-side
        # write by name follows (a host write as root), or a FIFO that a host read blocks on. They are copied out.
        kwargs["auto_mounting"] = False
        super().__init__(*args, **kwargs)

    @property
    def _env_log_dir(self) -> Path:
        return self.trial_paths.trial_dir / "environment" / self.session_id.rsplit("__", 1)[-1]

    def _note(self, text: str) -> None:
        self._notes.append(text)
        self._env_log_dir.mkdir(parents=True, exist_ok=True)
        (self._env_log_dir / NOTES_FILE).write_text("\n".join(self._notes) + "\n")

    async def _thaw(self) -> None:
        """A quiesced sandbox asked to run a command (a collect hook): start it again, with none of the agent's
        processes. Not a snapshot: committing a sparse giant the agent left costs minutes. What starts now runs the
        agent's own files, like the hook itself does, so a hook is as trustworthy as those files (docs/sandbox.md)."""
        code, _, err = await _run(self.engine, "start", self._require(), timeout=120, finish_on_cancel=True)
        if code != 0:
            raise RuntimeError(f"{self.engine} start failed: {err.strip()[-300:]}")
        self._stopped = False
        self._note("commands after the agent phase ran in the restarted agent container, none of its processes left")

    def _require(self) -> str:
        if self._container is None:
            raise RuntimeError("the environment is not started")
        return self._container

    async def _exec_now(self, command: str, *, cwd: str | None, env: dict[str, str] | None,
                        timeout_sec: int | None, who: str | int | None) -> ExecResult:
        await self._drop_logs_copy()
        if self._stopped:
            await self._thaw()
        argv = [self.engine, "exec", "-i"]
        workdir = cwd or self.task_env_config.workdir
        if workdir:
            argv += ["--workdir", workdir]
        for key, value in (self._merge_env(env) or {}).items():
            argv += ["--env", f"{key}={value}"]
        if who is not None:
            argv += ["--user", str(who)]
        # A marker in the command's environment, inherited by all it starts, so a timeout can kill the whole tree:
        # killing the engine's client alone leaves the command running in the container.
        marker = f"ENVEVO_EXEC={uuid.uuid4().hex}"
        argv += ["--env", marker, self._require(), "bash", "-c", command]
        try:
            code, out, err = await _run(*argv, timeout=timeout_sec or None, limit=EXEC_OUTPUT_LIMIT)
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

    async def _drop_logs_copy(self) -> None:
        """Forget the copy of /logs: a command or an upload may change what it copied."""
        stash, self._logs_copy = self._logs_copy, None
        if stash is not None:
            await asyncio.to_thread(shutil.rmtree, stash, True)

    def _release(self) -> None:
        """End the held copies no download continued: an open `cp` must not outlive the next command."""
        held, self._held = self._held, {}
        for copy in held.values():
            copy.close()


def _norm(path: str) -> str:
    return str(PurePosixPath(path))


def _overlaps(a: str, b: str) -> bool:
    pa, pb = PurePosixPath(a), PurePosixPath(b)
    return pa == pb or pa in pb.parents or pb in pa.parents
