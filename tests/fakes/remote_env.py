"""A fake remote Harbor environment: a cloud sandbox provider with latency, 429s and dropped connections, and
no containers at all. Nothing it is asked to run is run, so every verdict is simulated, as perfect tests would
give it: a trial whose agent ran the task's reference solution scores 1, any other 0 (the oracle passes; the empty
agent, every exploit and every near-miss solution of the mutation verifier fail). A near miss is told from the
reference by its trial's name (`…__mut-<id>__…`, as the mutation verifier names it and reads it back): its
solve.sh is the task's with one step wrong or skipped, which tests that check every step score 0.

Plug it in with `--env tests.fakes.remote_env:FakeRemoteEnvironment`. It reads its faults from the environment,
so every process that runs trials (a Ray worker too) behaves alike:
  FAKE_REMOTE_LATENCY      seconds per provider call (start, exec, upload, download); default 0.05
  FAKE_REMOTE_START_429    probability that a start is refused with 429 Too Many Requests
  FAKE_REMOTE_DISCONNECT   probability that an exec drops the connection
  FAKE_REMOTE_DROP_AT      each trial's first sandbox drops the connection at its Nth exec, once (deterministic)
  FAKE_REMOTE_QUOTA        sandboxes the provider lets one process keep alive; one more start is refused (quota)
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from pathlib import Path
from typing import Any, ClassVar

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities


def _knob(name: str, default: float = 0.0) -> float:
    return float(os.environ.get(name, default))


def near_miss(trial_dir: str) -> bool:
    """A mutant's trial (envevo/verify/_mutation.py names them so): its solve.sh is not the reference solution."""
    return "__mut-" in Path(trial_dir).name


class ProviderError(Exception):
    """What a provider's client raises for an HTTP error: the status is in the message."""


class FakeRemoteEnvironment(BaseEnvironment):
    # What the provider saw, across every sandbox of this process (tests read these).
    alive: ClassVar[int] = 0
    peak: ClassVar[int] = 0
    starts: ClassVar[list[float]] = []  # monotonic times of accepted starts
    refused: ClassVar[int] = 0
    dropped: ClassVar[int] = 0
    execs: ClassVar[int] = 0
    dropped_trials: ClassVar[set[str]] = set()
    solved: ClassVar[set[str]] = set()  # trial dirs whose agent ran the solution

    def __init__(self, *args: Any, **kwargs: Any):
        self._up = False
        self._rng = random.Random()
        self._execs = 0
        super().__init__(*args, **kwargs)

    @classmethod
    def reset(cls) -> None:
        cls.alive, cls.peak, cls.starts, cls.refused, cls.dropped, cls.execs = 0, 0, [], 0, 0, 0
        cls.solved, cls.dropped_trials = set(), set()

    @staticmethod
    def type() -> str:
        return "fake-remote"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self) -> None:
        pass

    async def _call(self) -> None:
        await asyncio.sleep(_knob("FAKE_REMOTE_LATENCY", 0.05))

    async def start(self, force_build: bool) -> None:
        asked = time.monotonic()  # when the request left: what a provider's rate limit sees
        await self._call()
        cls = FakeRemoteEnvironment  # not type(self): a quota wrapper subclasses it
        quota = int(_knob("FAKE_REMOTE_QUOTA", 0))
        if self._rng.random() < _knob("FAKE_REMOTE_START_429") or (quota and cls.alive >= quota):
            cls.refused += 1
            raise ProviderError("429 Too Many Requests: sandbox quota exceeded")
        cls.alive += 1
        cls.peak = max(cls.peak, cls.alive)
        cls.starts.append(asked)
        self._up = True

    async def stop(self, delete: bool) -> None:
        if self._up:
            self._up = False
            FakeRemoteEnvironment.alive -= 1
        await self._call()

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        await self._call()
        FakeRemoteEnvironment.execs += 1
        self._execs += 1
        trial = str(self.trial_paths.trial_dir)
        once = self._execs == int(_knob("FAKE_REMOTE_DROP_AT", 0)) and trial not in FakeRemoteEnvironment.dropped_trials
        if once or self._rng.random() < _knob("FAKE_REMOTE_DISCONNECT"):
            FakeRemoteEnvironment.dropped_trials.add(trial)
            FakeRemoteEnvironment.dropped += 1
            raise ConnectionResetError("Connection reset by peer")
        if "solve.sh" in command and not near_miss(trial):  # a separate verifier's sandbox shares the trial's fate
            FakeRemoteEnvironment.solved.add(trial)
        return ExecResult(stdout="", stderr="", return_code=0)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._call()

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._call()

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        await self._call()
        self._write_logs(source_path, Path(target_path).parent, Path(target_path).name)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await self._call()
        self._write_logs(source_dir, Path(target_dir), None)

    def _write_logs(self, source: str, target_dir: Path, name: str | None) -> None:
        target_dir.mkdir(parents=True, exist_ok=True)
        if "verifier" in source and name in (None, "reward.txt"):
            (target_dir / "reward.txt").write_text("1" if str(self.trial_paths.trial_dir) in FakeRemoteEnvironment.solved else "0")
