"""The schedulers by name: the one place a scheduler is added.

A lazy map name -> "module:Class" (see `envevo._registry`): listing the names reads no scheduler module, and
building one imports only the module of the scheduler named. A scheduler class sets `name` to the name it is
registered under (it is written into `state_dict()`); `scheduler_class` checks the two agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envevo._registry import Entry, Registry
from envevo.schedule._records import ScheduleError

if TYPE_CHECKING:
    from envevo.schedule._base import Scheduler

# In the order `schedule list` shows them and `schedule simulate` compares them.
SCHEDULERS = Registry("scheduler", {
    "el": Entry("envevo.schedule._el:ELScheduler", summary=(
        "Evolution-Lineage: generation order, advance an environment when a group passes > τ·B")),
    "random": Entry("envevo.schedule._uniform:RandomScheduler", summary=(
        "uniform over every environment of every generation")),
    "plr": Entry("envevo.schedule._plr:PLRScheduler", summary=(
        "Prioritized Level Replay: rank-prioritized by last |advantage|, mixed with staleness")),
    "sfl": Entry("envevo.schedule._sfl:SFLScheduler", summary=(
        "SFL: a buffer of the most learnable environments by p(1−p), mixed with uniform draws")),
    "dapo": Entry("envevo.schedule._uniform:DAPOScheduler", summary=(
        "DAPO dynamic sampling: uniform draws; zero-variance groups are dropped and refilled")),
    "pools": Entry("envevo.schedule._pools:PoolsScheduler", summary=(
        "prime-rl difficulty pools: easy/normal/hard by last mean reward, fixed sampling fractions")),
    "coevo": Entry("envevo.schedule._coevo:CoevoScheduler", summary=(
        "co-evolution-style: seeds plus their skill-only variants, weighted toward weak skills")),
}, error=ScheduleError)


def register_scheduler(name: str, target: str, summary: str = "", extra: str | None = None) -> None:
    """Make a scheduler outside envevo available by `name` to `make_scheduler` and the CLI; `target` is
    "package.module:Class" (imported when the name is first used), `extra` the pip extra it needs, if any."""
    SCHEDULERS.register(name, target, extra, summary)


def scheduler_names() -> list[str]:
    """Registered names: the built-ins in a fixed order, then any registered later."""
    return SCHEDULERS.names()


def scheduler_summary(name: str) -> str:
    return _entry(name).summary


def scheduler_class(name: str) -> type[Scheduler]:
    """The class registered as `name`, imported now."""
    from envevo.schedule._base import Scheduler

    _entry(name)
    cls = SCHEDULERS.load(name)
    if not (isinstance(cls, type) and issubclass(cls, Scheduler)):
        raise ScheduleError(f"scheduler {name!r} ({SCHEDULERS[name].target}) is not a Scheduler subclass")
    if cls.name != name:
        raise ScheduleError(f"scheduler {name!r} ({SCHEDULERS[name].target}) says its name is {cls.name!r}")
    return cls


def _entry(name: str) -> Entry:
    if name not in SCHEDULERS:
        raise ScheduleError(f"unknown scheduler {name!r}; choose from: {', '.join(scheduler_names())}")
    return SCHEDULERS[name]
