"""The trainer's side of live trials: a blocking client of a worker process (envevo/trainers/_live_worker.py).

It imports neither Harbor nor asyncio's machinery into the trainer: the worker runs in `python` (default: this
interpreter; `ENVEVO_RUNTIME_PYTHON` names another, one with envevo and Harbor installed, when the trainer's own
cannot have Harbor). Calls are thread-safe and may overlap: each waits only for its own answer.

    client = shared_client()
    trial = client.start("runs/demo/rl/tasks/g03", env="podman")
    code, output = client.exec(trial, "ls /app")
    outcome = client.finish(trial)        # a TrialOutcome: the task's own verifier mode decided the reward
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from envevo.runtime import DEFAULT_ENGINE, TrialOutcome

PYTHON_ENV_VAR = "ENVEVO_RUNTIME_PYTHON"


def runtime_python(python: str | os.PathLike[str] | None = None) -> str:
    """The worker's interpreter: the one given, else $ENVEVO_RUNTIME_PYTHON, else this one."""
    return str(python or os.environ.get(PYTHON_ENV_VAR) or sys.executable)


class LiveTrialFailed(Exception):
    """The worker refused a request (an unknown trial, a sandbox that did not start) or is gone; one line."""


class LiveTrialClient:
    """One worker process; trials it starts are removed when it closes or the trainer exits."""

    def __init__(self, python: str | os.PathLike[str] | None = None, trials_dir: str | os.PathLike[str] | None = None,
                 start_timeout_sec: float = 120) -> None:
        self.python = runtime_python(python)
        self.trials_dir = Path(trials_dir) if trials_dir else Path(tempfile.mkdtemp(prefix="envevo-live-"))
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [self.python, "-m", "envevo.trainers._live_worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, encoding="utf-8", bufsize=1,
        )
        self._hello: Future[dict[str, Any]] = Future()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._hello.result(timeout=start_timeout_sec)
        except Exception:
            self.close()
            raise LiveTrialFailed(
                f"the runtime worker did not start under {self.python} (it needs envevo with Harbor installed; "
                f"set {PYTHON_ENV_VAR} to an interpreter that has them)") from None

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if message.get("ready"):
                self._hello.set_result(message)
                continue
            with self._lock:
                future = self._pending.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)
        gone = LiveTrialFailed(f"the runtime worker ({self.python}) exited with {self._proc.wait()}")
        if not self._hello.done():
            self._hello.set_exception(gone)
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(gone)

    def _call(self, op: str, **fields: object) -> dict[str, Any]:
        rid = next(self._ids)
        future: Future[dict[str, Any]] = Future()
        with self._lock:
            if self._proc.poll() is not None or self._proc.stdin is None:
                raise LiveTrialFailed(f"the runtime worker ({self.python}) is not running")
            self._pending[rid] = future
            self._proc.stdin.write(json.dumps({"id": rid, "op": op, **fields}) + "\n")
            self._proc.stdin.flush()
        answer = future.result()
        if not answer.get("ok"):
            raise LiveTrialFailed(str(answer.get("error", "refused")))
        return answer

    def start(self, task_dir: str | os.PathLike[str], env: str = DEFAULT_ENGINE, *, timeout_multiplier: float = 1.0,
              keep: bool = False) -> str:
        """Start a trial of `task_dir` (the build and sandbox start go on in the background); its id."""
        answer = self._call("start", task_dir=str(Path(task_dir).resolve()), env=env,
                            trials_dir=str(self.trials_dir), timeout_multiplier=timeout_multiplier, keep=keep)
        return str(answer["trial"])

    def exec(self, trial: str, command: str, timeout_sec: int = 180) -> tuple[int | None, str]:
        """Run `command` as the task's agent user, once the sandbox is up; exit code None means it timed out."""
        answer = self._call("exec", trial=trial, command=command, timeout_sec=timeout_sec)
        return answer["exit_code"], str(answer["output"])

    def finish(self, trial: str) -> TrialOutcome:
        """End the agent's turn and verify with the task's own verifier mode; the trial dir is removed unless kept."""
        return TrialOutcome.model_validate(self._call("finish", trial=trial)["outcome"])

    def cancel(self, trial: str) -> None:
        """Drop the trial without a verdict; its sandbox is removed."""
        self._call("cancel", trial=trial)

    def close(self) -> None:
        """End the worker: closing its stdin cancels every trial it holds."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()


# One worker per interpreter path in a trainer process: every environment instance of a batch shares it, so a
# batch of 64 rollouts is one Harbor process, not 64.
_SHARED: dict[str, LiveTrialClient] = {}
_SHARED_LOCK = threading.Lock()


def shared_client(python: str | os.PathLike[str] | None = None) -> LiveTrialClient:
    """This process's client for `python` (started on first use, restarted if its worker died)."""
    key = runtime_python(python)
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None or client._proc.poll() is not None:
            client = _SHARED[key] = LiveTrialClient(key)
        return client
