"""Progress of a lineage, for progress bars and logs: an `Event` per step, its `Stage` an enum (Harbor's `TrialEvent`
is the model). Stages are str enums, so a stage prints, compares and pickles (Ray workers send events) as the plain
string it always was."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Stage(StrEnum):
    """Where in a generation (or a seed's start) an event comes from."""

    GENERATION = "generation"  # a generation starts: ξ's length
    DIRECTION = "direction"  # the direction tried next
    PLAN = "plan"  # a plan accepted, rejected, or impossible
    CANDIDATE = "candidate"  # the Modifier's candidate: modifying, verifying, or why it failed
    TRIAL = "trial"  # a verification trial finished
    DRIFT = "drift"  # the drift of an accepted candidate could not be measured
    ACCEPTED = "accepted"  # the generation committed
    JUDGED = "judged"  # the seed's rubric verdict, which does not gate it
    WEAK = "weak"  # the seed's tests miss a near miss: accepted, and said (rejected under --mutation strict)
    TERMINATED = "terminated"  # the lineage ended
    DONE = "done"  # the lineage reached the run's generations
    KEPT = "kept"  # a resume keeps a lineage as stored
    WORKER = "worker"  # the Ray worker that runs the generation


@dataclass(frozen=True)
class Event:
    """Progress of a lineage, for progress bars and logs."""

    lineage: str
    generation: int
    stage: Stage
    detail: str = ""

    def __post_init__(self) -> None:  # a stage given as its string is the enum member; an unknown one is an error
        object.__setattr__(self, "stage", Stage(self.stage))
