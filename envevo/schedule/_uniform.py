"""Uniform random scheduling, and DAPO-style dynamic sampling on top of it."""

from __future__ import annotations

from collections.abc import Mapping

from envevo.schedule._base import ObservationFlags, Scheduler
from envevo.schedule._records import EnvTable, Lineages, state_int


class RandomScheduler(Scheduler):
    """Each batch: distinct environments drawn uniformly (with replacement only when n exceeds the pool)."""

    name = "random"

    def _select(self, n: int) -> list[int]:
        return self._uniform(n)


class DAPOScheduler(Scheduler):
    """DAPO's dynamic sampling (Yu et al., 2025): prompts are drawn uniformly; a group whose rewards are all
    equal (all pass or all fail) carries no GRPO advantage and is dropped (``Observation.keep=False``), and
    the trainer draws again (``next`` for the number dropped) until the batch is full of informative
    groups or its refill budget (DAPO's ``max_num_gen_batches``) runs out. ``pending_refill`` counts the
    dropped groups not yet replaced by a ``next`` call."""

    name = "dapo"

    dynamic_sampling = True

    def __init__(self, lineages: Lineages | EnvTable, *, group_size: int = 8, seed: int = 0, pass_threshold: float = 1.0) -> None:
        super().__init__(lineages, group_size=group_size, seed=seed, pass_threshold=pass_threshold)
        self.pending_refill = 0

    def _select(self, n: int) -> list[int]:
        self.pending_refill = max(0, self.pending_refill - n)
        return self._uniform(n)

    def _observe(self, i: int, rewards: list[float], passes: int) -> ObservationFlags:
        keep = max(rewards) != min(rewards)
        if not keep:
            self.pending_refill += 1
        return {"keep": keep}

    def _extra_state(self) -> dict[str, object]:
        return {"pending_refill": self.pending_refill}

    def _load_extra_state(self, extra: Mapping[str, object]) -> None:
        self.pending_refill = state_int(extra.get("pending_refill", 0))
