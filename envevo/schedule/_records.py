"""What a scheduler schedules: environment records grouped into lineages, and the index tables built from them.

The input every scheduler takes is **lineages**: a sequence of lineages, each a sequence of
:class:`EnvRecord` (one per committed, verified version: generation 0 is the seed). A record needs only
``id``, ``lineage`` and ``generation``; ``trace`` (ξ) and ``D_T`` are used where a scheduler or the
simulator needs them (co-evolution reads ξ, the simulator's learner reads ξ, ``order="difficulty"`` reads
D_T). Dicts with the same keys are accepted, and so is a flat sequence of records (grouped by ``lineage``).

An environment id is what a trainer sees and hands back. For a run's store it is the export name
``<lineage>__g<NN>``, the same name ``envevo export`` gives the task directory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from envevo.errors import UserError
from envevo.trace import Trace


class ScheduleError(UserError, ValueError):
    """Input a scheduler cannot use: an empty pool, duplicate ids, an unknown id, a foreign state dict."""


def state_int(value: object) -> int:
    """An integer of a saved scheduler state (JSON); anything that is not a number is a :class:`ScheduleError`."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise ScheduleError(f"a scheduler state holds {value!r} where a number belongs; the state file is damaged")


class EnvRecord(BaseModel):
    """One environment a scheduler can serve: one committed version of one lineage."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="what the trainer sees; for a store: the export name <lineage>__g<NN>")
    lineage: str
    generation: int = Field(ge=0)
    trace: Trace | None = Field(default=None, description="ξ of this version, if recorded")
    D_T: float | None = None
    direction: str | None = Field(default=None, description="the direction that produced it (None: a seed)")
    task_hash: str | None = None


type Lineages = Sequence[Sequence[EnvRecord | Mapping[str, object]]] | Sequence[EnvRecord | Mapping[str, object]]


def _record(x: object) -> EnvRecord:
    # `object`: a malformed pool (a record where a lineage belongs, or the reverse) reaches here and is refused.
    if isinstance(x, EnvRecord):
        return x
    if isinstance(x, Mapping):
        return EnvRecord.model_validate(dict(x))
    raise ScheduleError(f"an environment record must be an EnvRecord or a dict, got {type(x).__name__}")


def normalize_lineages(lineages: Lineages) -> list[list[EnvRecord]]:
    """Lineages as lists of records sorted by generation, checked: non-empty, unique ids, one lineage name
    per lineage, no generation twice in a lineage. A flat sequence of records is grouped by ``lineage``."""
    items = list(lineages)
    if not items:
        raise ScheduleError("no environments to schedule: the lineage pool is empty")
    if all(isinstance(x, (EnvRecord, Mapping)) for x in items):
        groups: dict[str, list[EnvRecord]] = {}
        for x in items:
            r = _record(x)
            groups.setdefault(r.lineage, []).append(r)
        nested = list(groups.values())
    else:
        nested = [[_record(x) for x in lin] for lin in items]
    out: list[list[EnvRecord]] = []
    seen: set[str] = set()
    names: set[str] = set()
    for lin in nested:
        if not lin:
            continue
        name = lin[0].lineage
        if any(r.lineage != name for r in lin):
            raise ScheduleError(f"lineage {name!r} holds records of other lineages; group records by `lineage`")
        if name in names:
            raise ScheduleError(f"lineage {name!r} is given twice")
        names.add(name)
        lin = sorted(lin, key=lambda r: r.generation)
        gens = [r.generation for r in lin]
        if len(set(gens)) != len(gens):
            raise ScheduleError(f"lineage {name!r} has a generation twice")
        for r in lin:
            if r.id in seen:
                raise ScheduleError(f"environment id {r.id!r} appears twice")
            seen.add(r.id)
        out.append(lin)
    if not out:
        raise ScheduleError("no environments to schedule: every lineage is empty")
    return out


class EnvTable:
    """Flat index arrays over a normalized pool: what schedulers work on (ints, not strings)."""

    def __init__(self, lineages: Lineages) -> None:
        self.lineages: list[list[EnvRecord]] = normalize_lineages(lineages)
        self.records: list[EnvRecord] = [r for lin in self.lineages for r in lin]
        self.ids: list[str] = [r.id for r in self.records]
        self.index: dict[str, int] = {e: i for i, e in enumerate(self.ids)}
        self.lineage_names: list[str] = [lin[0].lineage for lin in self.lineages]
        lin_of, gen = [], []
        self.lineage_envs: list[list[int]] = []
        i = 0
        for k, lin in enumerate(self.lineages):
            self.lineage_envs.append(list(range(i, i + len(lin))))
            for r in lin:
                lin_of.append(k)
                gen.append(r.generation)
                i += 1
        self.lineage_of = np.asarray(lin_of, dtype=np.int64)
        self.generation = np.asarray(gen, dtype=np.int64)
        self.dt = np.asarray([np.nan if r.D_T is None else r.D_T for r in self.records], dtype=np.float64)
        self.fingerprint = hashlib.sha256("\n".join(self.ids).encode()).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.ids)

    def position(self, env_id: str) -> int:
        try:
            return self.index[env_id]
        except KeyError:
            raise ScheduleError(f"unknown environment id {env_id!r}: it is not in this scheduler's pool") from None
