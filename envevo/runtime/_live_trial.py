"""A live trial: a real trial whose agent's commands arrive one at a time from outside, e.g. a trainer's tool loop.

A trainer that generates an agent's turns itself (TRL's multi-turn environments) needs a shell into the task's
sandbox while it generates, then a reward. Running its commands in a bare container and its tests beside them would
drop what keeps the reward honest (a separate verifier, artifacts, collect hooks read from a stopped container, the
no-network policy). So the commands go to the agent of an ordinary trial (`run_trial`, the driven agent), which
waits for them on a channel; when the trainer asks for the reward, the agent's phase ends and the trial goes on as
every verification does, with the task's own verifier mode.

    live = LiveTrial(TrialSpec(task_dir=..., agent="", trials_dir=...))
    live.start()
    code, output = await live.exec("ls /app", timeout_sec=60)
    outcome = await live.finish()          # the TrialOutcome: reward, error kind, timings
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from envevo.runtime._agents import DRIVEN_AGENT, DriverResult, ShellExec
from envevo.runtime._outcome import TrialOutcome, TrialSpec

# Harbor builds the agent from the trial's JSON config, so the driver finds its channel by id in this process.
_CHANNELS: dict[str, _Channel] = {}


@dataclass
class _Channel:
    ready: asyncio.Future[ShellExec] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    turns: int = 0


class ChannelDriver:
    """The driven agent's driver: hands the sandbox's exec to the live trial, then waits until it is told to end."""

    def __init__(self, channel: str) -> None:
        self._channel = _CHANNELS[channel]

    async def run(self, instruction: str, exec: ShellExec) -> DriverResult:
        if not self._channel.ready.done():
            self._channel.ready.set_result(exec)
        await self._channel.ended.wait()
        return DriverResult(metadata={"n_turns": self._channel.turns})


class LiveTrialError(Exception):
    """The live trial cannot take commands: its sandbox did not start, or its agent's phase is over."""


class LiveTrial:
    """One trial of `spec.task_dir` whose agent runs the commands given to `exec` until `finish`."""

    def __init__(self, spec: TrialSpec) -> None:
        self.id = uuid.uuid4().hex[:12]
        self._spec = spec.model_copy(update={
            "agent": DRIVEN_AGENT,
            "agent_kwargs": {"driver": f"{__name__}:ChannelDriver", "options": {"channel": self.id}},
        })
        self._channel: _Channel | None = None
        self._trial: asyncio.Task[TrialOutcome] | None = None

    def start(self) -> None:
        """Begin the trial (build, start the sandbox); returns at once, `exec` waits for the sandbox."""
        from envevo.runtime._trial import run_trial

        self._channel = _CHANNELS[self.id] = _Channel()
        self._trial = asyncio.get_running_loop().create_task(run_trial(self._spec))

    async def _shell(self) -> ShellExec:
        assert self._channel is not None and self._trial is not None, "start() first"
        if self._channel.ended.is_set():
            raise LiveTrialError("the agent's turn is over: the trial is being verified")
        waits: set[asyncio.Future[object]] = {self._channel.ready, self._trial}  # type: ignore[arg-type]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if self._channel.ready.done():
            if self._trial.done():  # e.g. Harbor's agent timeout ended the phase
                raise LiveTrialError(f"the agent's phase has ended: {self._ending()}")
            return self._channel.ready.result()
        raise LiveTrialError(f"the sandbox did not start: {self._ending()}")

    def _ending(self) -> str:
        assert self._trial is not None
        if self._trial.cancelled():
            return "cancelled"
        if self._trial.exception() is not None:
            return f"{type(self._trial.exception()).__name__}: {self._trial.exception()}"
        outcome = self._trial.result()
        return f"{outcome.error_kind.value}: {outcome.error_message or ''}".strip(": ")

    async def exec(self, command: str, timeout_sec: int = 180) -> tuple[int | None, str]:
        """Run `command` as the task's agent user; (exit code, stdout + stderr). A timeout is exit code None."""
        shell = await self._shell()
        assert self._channel is not None
        self._channel.turns += 1
        try:
            return await shell(command, max(1, int(timeout_sec)))
        except RuntimeError as exc:  # the environment's exec timeout
            return None, str(exc)

    async def finish(self) -> TrialOutcome:
        """End the agent's phase and let the trial verify; the outcome of the whole trial."""
        assert self._channel is not None and self._trial is not None, "start() first"
        self._channel.ended.set()
        try:
            return await self._trial
        finally:
            _CHANNELS.pop(self.id, None)

    async def cancel(self) -> None:
        """Stop the trial without a verdict (its sandbox is removed)."""
        if self._trial is not None and not self._trial.done():
            self._trial.cancel()
            await asyncio.gather(self._trial, return_exceptions=True)
        _CHANNELS.pop(self.id, None)

