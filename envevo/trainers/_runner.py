"""What runs an exported task, and which of the task's guarantees it keeps: the runner protocol and its capabilities.

A *runner* is whatever executes a rollout of an exported task and decides its reward: envevo's own runtime, Harbor's
trial loop, SkyRL's Harbor generator, verifiers' ``HarborTaskset``, TRL's ``HarborEnv``, or one of envevo's live-trial
adapters. A task keeps its reward honest through fields a runner may drop (a separate verifier, artifacts and collect
hooks, no network) and needs its image built or prebuilt. Each runner's :class:`RunnerSpec` says, per
:class:`Capability`, whether it honours it; ``envevo export --runner NAME`` and every adapter refuse tasks whose needs
their runner would drop (:func:`check_tasks`), and docs/trainers.md's "which runner honours what" table is generated
from the specs (``python -m envevo.trainers._table``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import ClassVar, Protocol, runtime_checkable

from envevo.schedule import ScheduleError
from envevo.task import value_at


class Capability(Enum):
    """A task field (or image source) a runner may or may not honour; the value is how it is named to a user."""

    BUILDS_IMAGES = "a Dockerfile build"
    PREBUILT_IMAGES = "a prebuilt image (docker_image)"
    SEPARATE_VERIFIER = "separate verifier"
    ARTIFACTS = "artifacts / collect hooks"
    NO_NETWORK = "no-network"


class Level(StrEnum):
    YES = "yes"
    NO = "no"
    DEPENDS = "depends"  # on something the runner's own configuration decides; the note says what


@dataclass(frozen=True)
class Honours:
    level: Level
    note: str = ""

    def cell(self) -> str:
        """The table cell: ``yes``, ``yes (note)``, ``**no**: note`` or the note alone."""
        if self.level is Level.YES:
            return f"yes ({self.note})" if self.note else "yes"
        if self.level is Level.NO:
            return f"**no**: {self.note}" if self.note else "**no**"
        return self.note


def yes(note: str = "") -> Honours:
    return Honours(Level.YES, note)


def no(note: str = "") -> Honours:
    return Honours(Level.NO, note)


def depends(note: str) -> Honours:
    return Honours(Level.DEPENDS, note)


#: What a runner honours whose every rollout is a live trial of envevo's runtime (OpenEnv's server, SkyRL's live
#: generator): the task's own verifier mode, artifacts and collect hooks, its network policy, a prebuilt image.
LIVE_TRIAL: Mapping[Capability, Honours] = {
    Capability.BUILDS_IMAGES: yes(), Capability.SEPARATE_VERIFIER: yes(),
    Capability.ARTIFACTS: yes("artifacts in the test; collect hooks by the same runtime"), Capability.NO_NETWORK: yes(),
    Capability.PREBUILT_IMAGES: yes("envevo's runtime"),
}


@dataclass(frozen=True)
class RunnerSpec:
    """One runner's capability constants: a name (``envevo export --runner NAME``), the label the docs use, the
    envevo.trainers package that drives it (None: not a trainer), what it honours, and what was run to say so."""

    name: str
    label: str
    trainer: str | None
    honours: Mapping[Capability, Honours]
    tested: str
    remedy: str = ""  # what to do instead when it would drop a task's guarantee
    capabilities: frozenset[Capability] = field(init=False)

    def __post_init__(self) -> None:
        missing = set(Capability) - set(self.honours)
        if missing:
            raise ValueError(f"runner {self.name!r} does not say whether it honours {sorted(c.name for c in missing)}")
        object.__setattr__(self, "capabilities",
                           frozenset(c for c, h in self.honours.items() if h.level is Level.YES))

    def level(self, capability: Capability) -> Level:
        return self.honours[capability].level


@runtime_checkable
class Runner(Protocol):
    """An adapter that runs (or hands to a runner) the rollouts of exported tasks: it names its runner's spec, and
    checks every task it is given against it (:func:`check_tasks`) before a trial starts."""

    runner: ClassVar[RunnerSpec]


def task_needs(config: Mapping[str, object], *, images: bool = False) -> list[Capability]:
    """What a task's config (task.toml, as envevo's loader normalises it: every schema version) needs a runner to
    honour, in :class:`Capability` order. ``images``: the export will name a prebuilt image (``--images``)."""
    image = value_at(config, "environment", "docker_image")
    needs = {Capability.PREBUILT_IMAGES if images or image else Capability.BUILDS_IMAGES}
    # a separate verifier is declared by environment_mode or by a [verifier.environment] table, as Harbor resolves it
    mode = value_at(config, "verifier", "environment_mode")
    if (mode if mode is not None else "separate" if value_at(config, "verifier", "environment") else None) == "separate":
        needs.add(Capability.SEPARATE_VERIFIER)
    if config.get("artifacts") or value_at(config, "verifier", "collect"):
        needs.add(Capability.ARTIFACTS)
    if value_at(config, "environment", "network_mode") == "no-network":
        needs.add(Capability.NO_NETWORK)
    return [c for c in Capability if c in needs]


def unhonoured(runner: RunnerSpec, tasks: Iterable[tuple[str, Mapping[str, object]]], *,
               images: bool = False) -> dict[str, list[Capability]]:
    """Task name -> what it needs that ``runner`` does not honour (tasks that lose nothing are left out)."""
    lost: dict[str, list[Capability]] = {}
    for name, config in tasks:
        drops = [c for c in task_needs(config, images=images) if runner.level(c) is Level.NO]
        if drops:
            lost[name] = drops
    return lost


def refusal(runner: RunnerSpec, lost: Mapping[str, list[Capability]]) -> str:
    """One line: which tasks lose what under ``runner``, and what to do instead."""
    name, caps = next(iter(lost.items()))
    line = (f"{runner.label} does not honour what {len(lost)} task(s) need (e.g. {name}: "
            f"{', '.join(c.value for c in caps)})")
    return line + (f"; {runner.remedy}" if runner.remedy else "")


def check_tasks(runner: RunnerSpec, tasks: Iterable[tuple[str, Mapping[str, object]]], *, images: bool = False,
                allow: bool = False) -> dict[str, list[Capability]]:
    """Refuse (one line, naming a task and what it would lose) tasks whose needs ``runner`` drops; with ``allow``,
    warn instead. What was lost, per task."""
    lost = unhonoured(runner, tasks, images=images)
    if lost:
        if not allow:
            raise ScheduleError(refusal(runner, lost))
        import warnings

        warnings.warn(refusal(runner, lost), stacklevel=3)
    return lost


def task_configs(task_dirs: Iterable[str | os.PathLike[str]]) -> list[tuple[str, Mapping[str, object]]]:
    """(name, config) of each task directory, read through envevo's loader (every schema version); a directory that
    does not load is left to the runner, which reports it on its own."""
    from pathlib import Path

    from envevo.errors import TaskError
    from envevo.task import load_task

    configs: list[tuple[str, Mapping[str, object]]] = []
    for d in task_dirs:
        try:
            configs.append((Path(d).name, load_task(Path(d)).config))
        except TaskError:
            continue
    return configs


__all__ = ["Capability", "Honours", "Level", "Runner", "RunnerSpec", "check_tasks", "depends",
           "no", "refusal", "task_configs", "task_needs",
           "unhonoured", "yes"]
