"""prime-rl / verifiers: an envevo scheduler behind prime-rl's ``TaskSampler`` protocol.

prime-rl's orchestrator composes one ``TaskSampler`` per training source with its admission gates
(``prime_rl.orchestrator.curriculum``). The protocol, over ``verifiers.v1`` types:

- ``__next__() -> vf.Task``: the task of the next rollout group (the orchestrator rolls out
  ``group_size`` episodes of it);
- ``observe(group: list[vf.Episode])``: one finalized group, every group, admitted or not;
- ``state_dict()`` / ``load_state_dict()``: included in orchestrator checkpoints;
- ``metrics() -> dict[str, float]``: logged under ``curriculum/<env>/sampler/``.

:class:`EnvevoTaskSampler` implements it. A task is matched to its scheduler id by ``task.data.name``
(then ``task.data.id``; or pass ``env_id=``); a finalized group is matched back through ``Task.key``,
which the trace records. Rewards are counted like prime-rl's own ``DifficultyPoolSampler``: every
trainable trace without an error contributes ``trace.reward``; a rollout passes at ``reward >=
pass_threshold`` (the scheduler's, 1.0 by default). When prime-rl is importable the class is a real
subclass of its ``TaskSampler``; otherwise of ``collections.abc.Iterator`` with the same methods.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import verifiers.v1 as vf

from envevo.schedule import Observation, ScheduleError, Scheduler
from envevo.trainers._base import build_scheduler, check_trainer_state, trainer_state
from envevo.trainers._runner import RunnerSpec
from envevo.trainers.prime_rl import VERIFIERS_HARBOR

try:  # prime-rl is not on PyPI; use its base class when it is installed from source
    from prime_rl.orchestrator.curriculum.samplers import TaskSampler as _Base  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    _Base = Iterator  # type: ignore[assignment,misc]



def default_env_id(task: vf.Task) -> str:
    """The scheduler id of a verifiers task: ``data.name``, else ``data.id``."""
    data = task.data
    for attr in ("name", "id"):
        v = getattr(data, attr, None)
        if v:
            return str(v)
    raise ScheduleError(
        "a verifiers task has neither data.name nor data.id; name each task by its export name "
        "(<lineage>__gNN) or pass env_id=…"
    )


class EnvevoTaskSampler(_Base):  # type: ignore[misc,valid-type]
    """prime-rl ``TaskSampler`` serving tasks in an envevo scheduler's order (EL by default).

    Its runner is verifiers' ``HarborTaskset``, which refuses a task without a prebuilt image itself; the sampler gets
    verifiers' tasks, not task dirs, so ``envevo export --runner verifiers-harbor`` is where the export is checked."""

    runner: ClassVar[RunnerSpec] = VERIFIERS_HARBOR

    def __init__(
        self,
        tasks: Sequence[vf.Task],
        scheduler: Scheduler,
        *,
        env_id: Callable[[vf.Task], str] = default_env_id,
    ) -> None:
        if not isinstance(tasks, Sequence) or isinstance(tasks, (str, bytes)):
            raise ScheduleError("EnvevoTaskSampler needs a finite taskset (a sequence of verifiers tasks)")
        self.tasks = tuple(tasks)
        if not self.tasks:
            raise ScheduleError("EnvevoTaskSampler needs at least one task")
        keys = [t.key for t in self.tasks]
        dup = sorted(k for k, c in Counter(keys).items() if c > 1)
        if dup:
            raise ScheduleError(f"task keys must be unique within a taskset: {dup[:3]}")
        self.scheduler = scheduler
        self._by_env: dict[str, vf.Task] = {}
        self._env_of_key: dict[str, str] = {}
        for t in self.tasks:
            e = env_id(t)
            if e in self._by_env:
                raise ScheduleError(f"two tasks map to environment {e!r}")
            self._by_env[e] = t
            self._env_of_key[t.key] = e
        missing = [e for e in scheduler.env_ids if e not in self._by_env]
        if missing:
            raise ScheduleError(f"no task for scheduled environment(s) {missing[:3]}; "
                                "load the taskset from the same run's export")
        self.observations = 0
        self.last: Observation | None = None

    @classmethod
    def from_run(
        cls,
        tasks: Sequence[vf.Task],
        run_dir: str | os.PathLike[str],
        scheduler: str = "el",
        *,
        seed: int = 0,
        group_size: int = 8,
        env_id: Callable[[vf.Task], str] = default_env_id,
        **options: Any,
    ) -> EnvevoTaskSampler:
        """Schedule ``tasks`` over the lineages of RUN_DIR's store (``scheduler`` is a spec such as
        ``"el"`` or ``"el+patience"``; ``group_size`` must equal prime-rl's ``group_size``)."""
        sched = build_scheduler(scheduler, run_dir=run_dir, seed=seed, group_size=group_size, **options)
        return cls(tasks, sched, env_id=env_id)

    # ------------------------------------------------------------------------------------ the protocol

    def __iter__(self) -> EnvevoTaskSampler:
        return self

    def __next__(self) -> vf.Task:
        return self._by_env[self.scheduler.next(1)[0]]

    def observe(self, group: list[vf.Episode]) -> None:
        """Record one finalized group. Rollouts with an error, or of non-trainable agents, are not counted
        (as prime-rl's difficulty pools do); a group with none left is ignored."""
        if not group:
            raise ScheduleError("cannot observe an empty rollout group")
        keys = {ep.task.key for ep in group}
        if len(keys) != 1 or None in keys:
            raise ScheduleError(f"a finalized group must hold one task key, got {sorted(map(str, keys))}")
        key = keys.pop()
        env = self._env_of_key.get(key)  # type: ignore[arg-type]
        if env is None:
            raise ScheduleError(f"a finalized group's task key {key!r} is not in this sampler's taskset")
        rewards = [
            float(tr.reward)
            for ep in group
            for tr in ep.traces
            if not tr.has_error and getattr(tr.agent, "trainable", True)
        ]
        if not rewards:
            return
        self.last = self.scheduler.observe(env, rewards)
        self.observations += 1

    def state_dict(self) -> dict[str, object]:
        return trainer_state(observations=self.observations, scheduler=self.scheduler.state_dict())

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        check_trainer_state(state_dict, "EnvevoTaskSampler")
        self.scheduler.load_state_dict(state_dict["scheduler"])
        self.observations = int(state_dict.get("observations", 0))

    def metrics(self) -> dict[str, float]:
        """The scheduler's numeric progress counters (served, observed, late, …) as floats."""
        return {k: float(v) for k, v in self.scheduler.progress().items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}


__all__ = ["EnvevoTaskSampler", "default_env_id"]
