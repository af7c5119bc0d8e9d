"""The process that holds live trials for a trainer: `python -m envevo.trainers._live_worker`.

A trainer's interpreter often cannot import Harbor beside its own pins (verl and verifiers clash with it), and
Harbor's sandbox clients belong to one event loop. So live trials run here, in an interpreter that has envevo with
Harbor, and the trainer talks to this process through `LiveTrialClient` (envevo/trainers/_live_client.py): one JSON
object per line on stdin, one answer per line on the original stdout, matched by `id`. Requests run concurrently.

    {"id": 1, "op": "start", "task_dir": "...", "env": "podman", "trials_dir": "...", "keep": false}
      -> {"id": 1, "ok": true, "trial": "3f2a…"}
    {"id": 2, "op": "exec", "trial": "3f2a…", "command": "ls", "timeout_sec": 60}
      -> {"id": 2, "ok": true, "exit_code": 0, "output": "…"}
    {"id": 3, "op": "finish", "trial": "3f2a…"}   -> {"id": 3, "ok": true, "outcome": {TrialOutcome}}
    {"id": 4, "op": "cancel", "trial": "3f2a…"}   -> {"id": 4, "ok": true}

A task runs as `envevo verify` runs it: from a runnable copy (local stand-ins for base images this host cannot
pull, Harbor's schema fixes, heredocs rewritten for an old builder), made once per task and stated on stderr.
End of stdin (the trainer is gone) cancels every trial, which removes its sandbox.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from envevo.errors import TaskError, UserError
from envevo.runtime import DEFAULT_ENGINE, LiveTrial, LiveTrialError, TrialSpec
from envevo.sandbox import preflight, runnable_copy
from envevo.task import ImageMap, load_task

MAX_OUTPUT = 64_000  # characters of one command's output sent back; a trainer shows the model far less


class _Worker:
    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._trials: dict[str, tuple[LiveTrial, bool]] = {}  # id -> (trial, keep its dir)
        self._tasks: set[asyncio.Task[None]] = set()
        self._copies: dict[tuple[str, str], Path] = {}  # (task dir, env) -> its runnable copy
        self._ready_envs: set[str] = set()
        self._copying = asyncio.Lock()  # one runnable copy at a time: a batch resets the same task many times
        self._scratch = Path(tempfile.mkdtemp(prefix="envevo-live-tasks-"))

    def _answer(self, message: Mapping[str, object]) -> None:
        self._out.write(json.dumps(message) + "\n")
        self._out.flush()

    async def handle(self, line: str) -> None:
        rid = None
        try:
            request = json.loads(line)
            rid = request.get("id")
            answer = await getattr(self, f"_op_{request['op']}")(request)
            self._answer({"id": rid, "ok": True, **answer})
        except (LiveTrialError, UserError, TaskError, KeyError, ValueError, TypeError, AttributeError) as exc:
            self._answer({"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]})

    def _trial(self, request: dict[str, Any]) -> LiveTrial:
        try:
            return self._trials[request["trial"]][0]
        except KeyError:
            raise LiveTrialError(f"no live trial {request.get('trial')!r} (finished, cancelled or never started)") from None

    def _runnable(self, task_dir: Path, env: str) -> Path:
        if env not in self._ready_envs:
            preflight(env)  # one line for an unusable env; this host's containers.conf and CA trust applied
            self._ready_envs.add(env)
        key = (str(task_dir), env)
        if key not in self._copies:
            if not (task_dir / "task.toml").is_file():
                raise LiveTrialError(f"{task_dir} is not a Harbor task dir (no task.toml)")
            dest = self._scratch / str(len(self._copies))
            dest.mkdir()
            run_dir, stated = runnable_copy(load_task(task_dir), env, ImageMap(), dest)
            for line in stated:
                print(f"{task_dir.name}: {line}", file=sys.stderr)
            self._copies[key] = run_dir
        return self._copies[key]

    async def _op_start(self, request: dict[str, Any]) -> dict[str, object]:
        env = str(request.get("env", DEFAULT_ENGINE))
        async with self._copying:
            run_dir = await asyncio.to_thread(self._runnable, Path(request["task_dir"]), env)
        spec = TrialSpec(task_dir=run_dir, agent="", env=env, trials_dir=Path(request["trials_dir"]),
                         timeout_multiplier=float(request.get("timeout_multiplier", 1.0)))
        trial = LiveTrial(spec)
        trial.start()
        self._trials[trial.id] = (trial, bool(request.get("keep", False)))
        return {"trial": trial.id}

    async def _op_exec(self, request: dict[str, Any]) -> dict[str, object]:
        code, output = await self._trial(request).exec(str(request["command"]), int(request.get("timeout_sec", 180)))
        if len(output) > MAX_OUTPUT:
            output = output[:MAX_OUTPUT] + f"\n… [{len(output) - MAX_OUTPUT} more characters]"
        return {"exit_code": code, "output": output}

    async def _op_finish(self, request: dict[str, Any]) -> dict[str, object]:
        trial = self._trial(request)
        keep = self._trials.pop(trial.id)[1]
        outcome = await trial.finish()
        if not keep and outcome.trial_dir is not None:
            shutil.rmtree(outcome.trial_dir, ignore_errors=True)
        return {"outcome": outcome.model_dump(mode="json")}

    async def _op_cancel(self, request: dict[str, Any]) -> dict[str, object]:
        trial = self._trial(request)
        self._trials.pop(trial.id)
        await trial.cancel()
        return {}

    async def serve(self, stdin: TextIO) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()

        def read() -> None:  # a thread: stdin is a pipe, and a blocking read must not stop the sandboxes' loop
            for line in stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read, daemon=True).start()
        self._answer({"id": None, "ok": True, "ready": True})
        while (line := await lines.get()) is not None:
            if line.strip():
                task = asyncio.create_task(self.handle(line))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        await asyncio.gather(*(t.cancel() for t, _ in self._trials.values()), return_exceptions=True)
        shutil.rmtree(self._scratch, ignore_errors=True)


def main() -> None:
    # The answers go to the original stdout; anything else that prints (Harbor's logs) goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        asyncio.run(_Worker(out).serve(sys.stdin))
    except KeyboardInterrupt:  # the trainer's Ctrl-C reaches its whole process group; asyncio.run has cancelled
        sys.exit(130)


if __name__ == "__main__":
    main()
