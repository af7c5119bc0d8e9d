"""A training run's curriculum, one JSON line per optimizer step: which lineage and generation every prompt group came
from, its rewards, what the scheduler did with them, and the scheduler's state after.

A trainer adapter appends a line each time it feeds a generation batch back (``EnvevoGRPOTrainer(step_log=PATH)``).
Put the file at ``RUN/training/<name>.jsonl`` and ``envevo report RUN`` shows it. One line:

    {"step": 3, "groups": [{"env_id": "lin0__g01", "lineage": "lin0", "generation": 1, "rewards": [1.0, 0.0],
      "passes": 1, "advanced": false, "late": false}, ...],
     "scheduler": {"name": "el", "group_size": 2, "tau": 0.75, "served": [...], "lineages": {"lin0": 1, ...},
                   "progress": {...}}}

``lineages`` maps each lineage to the generation its frontier is at (the lowest one not yet passed), ``null`` when
every generation of it has passed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envevo.schedule import Observation, Scheduler
from envevo.trainers._base import ENV_ID, GENERATION, LINEAGE

#: Where `envevo report RUN` looks for training logs.
TRAINING_LOG_DIR = "training"


class StepLog:
    """Appends one line per step to ``path``; ``rows`` are the dataset's rows (env id -> lineage, generation)."""

    def __init__(self, path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.where = {str(r[ENV_ID]): (str(r[LINEAGE]), int(r[GENERATION])) for r in rows}

    def record(self, step: int, scheduler: Scheduler, observations: Sequence[Observation],
               rewards: Sequence[Sequence[float]]) -> dict[str, object]:
        """Append step STEP: each observed group (``rewards[k]`` = group k's rollouts) and the scheduler after."""
        groups = []
        for o, rs in zip(observations, rewards, strict=True):
            lineage, generation = self.where.get(o.env_id, (None, None))
            groups.append({"env_id": o.env_id, "lineage": lineage, "generation": generation,
                           "rewards": [round(float(r), 4) for r in rs], "passes": o.passes,
                           "advanced": bool(o.advanced), "late": bool(o.late)})
        line = {"step": int(step), "groups": groups, "scheduler": scheduler_state(scheduler, self.where)}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        return line


def scheduler_state(scheduler: Scheduler, where: Mapping[str, tuple[str, int]]) -> dict[str, object]:
    """What the log keeps of a scheduler: its settings, what it serves next, each lineage's frontier generation."""
    status = getattr(scheduler, "status_of", None)
    frontier: dict[str, int | None] = {}
    for env_id, (lineage, generation) in sorted(where.items(), key=lambda kv: (kv[1][0], kv[1][1])):
        frontier.setdefault(lineage, None)
        if status is not None and status(env_id) != "passed" and frontier[lineage] is None:
            frontier[lineage] = generation
    window = getattr(scheduler, "window", None)
    return {"name": scheduler.name, "group_size": scheduler.group_size, "tau": getattr(scheduler, "tau", None),
            "served": list(window()) if window is not None else None, "lineages": frontier,
            "progress": scheduler.progress()}


__all__ = ["TRAINING_LOG_DIR", "StepLog", "scheduler_state"]
