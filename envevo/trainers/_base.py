"""What every trainer adapter shares: building a scheduler from rows a trainer already holds, and feeding
finished groups back in one deterministic order.

A trainer's dataset row for an evolved environment carries its scheduler id (the export name
``<lineage>__g<NN>``) plus ``lineage`` and ``generation`` (and optionally ``D_T``): exactly the columns of
``envevo export RUN --format rl``. :func:`lineages_from_rows` rebuilds the lineage pool from those rows, so
a trainer process needs no access to the lineage store.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envevo.schedule import EnvRecord, Observation, ScheduleError, Scheduler, make_scheduler

#: The dataset columns (or ``extra_info`` keys) an adapter reads.
ENV_ID, LINEAGE, GENERATION, D_T = "env_id", "lineage", "generation", "D_T"
TASK_HASH = "task_hash"  # the exported task dir's content hash


def lineages_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[EnvRecord]:
    """The lineage pool described by dataset rows (each with ``env_id``, ``lineage``, ``generation``).

    A row may appear more than once (a dataset that repeats an environment); it must agree with itself."""
    seen: dict[str, EnvRecord] = {}
    for k, row in enumerate(rows):
        missing = [c for c in (ENV_ID, LINEAGE, GENERATION) if row.get(c) is None]
        if missing:
            raise ScheduleError(
                f"dataset row {k} lacks {', '.join(missing)}; build the dataset from `envevo export RUN --format rl`"
            )
        dt = row.get(D_T)
        rec = EnvRecord(
            id=str(row[ENV_ID]),
            lineage=str(row[LINEAGE]),
            generation=int(row[GENERATION]),
            D_T=None if dt is None or (isinstance(dt, float) and math.isnan(dt)) else float(dt),
        )
        old = seen.get(rec.id)
        if old is not None and (old.lineage, old.generation) != (rec.lineage, rec.generation):
            raise ScheduleError(f"environment {rec.id!r} appears with two different lineage/generation values")
        seen.setdefault(rec.id, rec)
    if not seen:
        raise ScheduleError("the dataset has no rows to schedule")
    return list(seen.values())  # grouped by lineage by normalize_lineages


def read_export_index(export_dir: str | os.PathLike[str], *, check: bool = True) -> list[dict[str, Any]]:
    """The rows of ``OUT/index.parquet`` (``env_id``, ``lineage``, ``generation``, ``D_T``, ``task_dir``,
    ``task_hash``) of an ``envevo export RUN --format rl --out OUT`` folder; with ``check``, every row's task
    directory must still be what was exported (:func:`check_export_rows`)."""
    from envevo.schedule import RL_INDEX

    index = Path(export_dir).expanduser() / RL_INDEX
    if not index.is_file():
        raise ScheduleError(f"{index.parent} has no {RL_INDEX}; write it with `envevo export RUN --format rl --out DIR`")
    import pyarrow.parquet as pq

    names = set(pq.read_schema(index).names)
    columns = [c for c in (ENV_ID, LINEAGE, GENERATION, D_T, "task_dir", TASK_HASH) if c in names]
    rows: list[dict[str, Any]] = pq.read_table(index, columns=columns).to_pylist()
    if check:
        check_export_rows(rows)
    return rows


def check_export_rows(rows: Iterable[Mapping[str, Any]]) -> None:
    """Refuse, by name, a row whose task directory is gone or whose content changed since the export (its
    ``task_hash``): a trainer would otherwise train on a task that was never verified."""
    from envevo.errors import TaskError
    from envevo.task import content_hash

    for row in rows:
        name, task_dir = row.get(ENV_ID), Path(str(row.get("task_dir")))
        if not (task_dir / "task.toml").is_file():
            raise ScheduleError(f"dataset row {name!r}: its task directory {task_dir} is missing; re-export the run")
        expected = row.get(TASK_HASH)
        if expected is None:
            raise ScheduleError(f"dataset row {name!r} has no {TASK_HASH}: the export predates it; re-export the run "
                                "with `envevo export RUN --format rl`")
        try:
            actual = content_hash(task_dir)
        except TaskError as exc:
            raise ScheduleError(f"dataset row {name!r}: {task_dir} no longer loads ({exc}); re-export the run") from None
        if actual != expected:
            raise ScheduleError(f"dataset row {name!r}: {task_dir} changed since the export (content hash "
                                f"{actual[:12]}, exported {str(expected)[:12]}); re-export the run")


TRAINER_STATE_FORMAT = 1  # the format of an adapter's checkpointed state (a dataset's, a sampler's)


def trainer_state(**fields: object) -> dict[str, object]:
    """An adapter's state for the trainer's checkpoint, marked with its format."""
    return {"format": TRAINER_STATE_FORMAT, **fields}


def check_trainer_state(state: Mapping[str, object], owner: str) -> None:
    """Refuse a checkpointed state that another format wrote (`owner`: the adapter class, named in the error)."""
    if state.get("format") != TRAINER_STATE_FORMAT:
        raise ScheduleError(f"unknown {owner} state format {state.get('format')!r}")


def build_scheduler(
    scheduler: Scheduler | str = "el",
    *,
    rows: Iterable[Mapping[str, Any]] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    group_size: int = 8,
    **options: object,
) -> Scheduler:
    """A scheduler instance as given, or one built from a spec (``"el"``, ``"el+patience"``, …) over the
    lineages of ``run_dir``'s store, or else over the pool the dataset ``rows`` describe."""
    if isinstance(scheduler, Scheduler):
        return scheduler
    if run_dir is not None:
        from envevo.schedule import load_lineages

        lineages: Any = load_lineages(run_dir)
    elif rows is not None:
        lineages = lineages_from_rows(rows)
    else:
        raise ScheduleError("build_scheduler needs a scheduler, a run directory or dataset rows")
    return make_scheduler(str(scheduler), lineages, seed=seed, group_size=group_size, **options)


class BatchDraws:
    """A scheduler's choices handed out one at a time, drawn ``batch`` at once.

    Dataset-driven trainers (verl, SkyRL) fetch items one by one; ``scheduler.next(1)`` each time would serve the
    front environment again and again until it is observed. Drawing ``next(batch)`` when the queue runs dry gives a
    batch the scheduler's whole window of distinct environments, chosen with everything observed so far."""

    def __init__(self, scheduler: Scheduler, batch: int) -> None:
        if batch < 1:
            raise ScheduleError(f"a batch of draws needs at least one environment, got {batch}")
        self.scheduler = scheduler
        self.batch = int(batch)
        self.queue: list[str] = []

    def __call__(self) -> str:
        if not self.queue:
            self.queue = self.scheduler.next(self.batch)
        return self.queue.pop(0)

    def state_dict(self) -> dict[str, object]:
        return {"batch": self.batch, "queue": list(self.queue), "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.scheduler.load_state_dict(dict(state["scheduler"]))
        self.batch, self.queue = int(state["batch"]), [str(e) for e in state["queue"]]


def row_positions(env_ids: Sequence[str], scheduler: Scheduler) -> dict[str, int]:
    """env id -> the first dataset row that holds it; every scheduled environment must have a row."""
    pos: dict[str, int] = {}
    for i, e in enumerate(env_ids):
        pos.setdefault(str(e), i)
    missing = [e for e in scheduler.env_ids if e not in pos]
    if missing:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        raise ScheduleError(
            f"the dataset has no row for scheduled environment(s) {', '.join(map(repr, missing[:3]))}{more}; "
            "export the dataset from the same run as the scheduler's lineages"
        )
    return pos


def observe_groups(
    scheduler: Scheduler, env_ids: Sequence[str], rewards: Sequence[float], group_size: int
) -> list[Observation]:
    """Feed consecutive blocks of ``group_size`` rollouts back, in order: block k is rows
    ``k*group_size … (k+1)*group_size-1``, all of one environment.

    Called with the same globally gathered lists on every rank, it leaves every rank's scheduler in the
    same state (the observation order is the row order, nothing else)."""
    if len(env_ids) != len(rewards):
        raise ScheduleError(f"{len(env_ids)} environment ids but {len(rewards)} rewards")
    if group_size < 1 or len(env_ids) % group_size:
        raise ScheduleError(f"{len(env_ids)} rollouts do not split into groups of {group_size}")
    out = []
    for k in range(0, len(env_ids), group_size):
        block = {str(e) for e in env_ids[k : k + group_size]}
        if len(block) != 1:
            raise ScheduleError(f"rollouts {k}…{k + group_size - 1} mix environments {sorted(block)}; "
                                "a group must be one environment")
        out.append(scheduler.observe(block.pop(), [float(r) for r in rewards[k : k + group_size]]))
    return out
