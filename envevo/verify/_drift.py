"""The drift bound as a rubric-slot check: a candidate whose instruction drifted too far from its lineage's seed fails.

Drift is 1 − the cosine similarity of the candidate's whole instruction to the seed's (envevo/trace/_drift.py:
paragraph chunks, token-weighted mean, all-MiniLM-L6-v2). `envevo evolve --max-drift X` adds one `DriftBound`
per lineage; its reason goes back to the Modifier like any verifier failure.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from envevo.task import Task
from envevo.trace import Drift, drift_reason
from envevo.verify._verdict import VerifierReport, finding


class DriftBound:
    """Passes when 1 − instruction similarity to `seed` is at most `max_drift`."""

    name = "drift"

    def __init__(self, seed: Task, max_drift: float, parent: Task | None = None):
        if not 0 <= max_drift <= 2:
            raise ValueError("max_drift is 1 − a cosine similarity: between 0 and 2")
        self.seed = seed
        self.parent = parent
        self.max_drift = max_drift
        self.last: Drift | None = None  # the figures of the last candidate checked

    async def check(self, task: Task, task_dir: Path) -> VerifierReport:
        from envevo.trace import measure_drift  # the encoder loads with the first check, not with envevo.verify

        # The encoder is CPU-bound numpy: off the event loop, so trials keep running meanwhile.
        drift = await asyncio.to_thread(measure_drift, task, self.seed, self.parent)
        self.last = drift
        if drift.drift_seed <= self.max_drift:
            return VerifierReport(name=self.name, passed=True)
        return VerifierReport(name=self.name, passed=False,
                              findings=[finding(self.name, drift_reason(drift, self.max_drift, task, self.seed))])
