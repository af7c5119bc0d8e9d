"""Helpers for the scheduler tests: hand-built pools, hypothesis strategies, and a driver that plays a
sequence of trainer actions (serve, observe in any order) against a scheduler and records what it did."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from envevo.schedule import EnvRecord
from envevo.trace import Step, Trace


def pool(lengths: list[int], *, gaps: bool = False, rng_seed: int = 0, traced: bool = False) -> list[list[EnvRecord]]:
    """Lineages L0, L1, … with the given numbers of versions; generations 0, 1, 2 … (or with gaps)."""
    rng = random.Random(rng_seed)
    out = []
    for k, n in enumerate(lengths):
        g, recs = 0, []
        for j in range(n):
            trace = None
            if traced:
                trace = Trace(goal="g", steps=tuple(Step(scenario=f"s{k}_{t}", skill=f"k{(k + t + j) % 5}")
                                                     for t in range(1 + j % 3)))
            recs.append(EnvRecord(id=f"L{k}__g{g:02d}", lineage=f"L{k}", generation=g, D_T=float(10 * g + k),
                                  trace=trace))
            g += rng.randint(1, 3) if gaps else 1
        out.append(recs)
    return out


pools = st.builds(
    lambda lengths, gaps, s: pool(lengths, gaps=gaps, rng_seed=s),
    st.lists(st.integers(1, 5), min_size=1, max_size=5),
    st.booleans(),
    st.integers(0, 1000),
)

# A trainer's actions: serve n groups, or finish one in-flight group (chosen by index) with some passes.
actions = st.lists(
    st.one_of(
        st.tuples(st.just("next"), st.integers(1, 6)),
        st.tuples(st.just("obs"), st.integers(0, 1000), st.integers(0, 8)),
    ),
    min_size=1,
    max_size=40,
)


def rewards_of(passes: int, group: int = 8) -> list[float]:
    return [1.0] * passes + [0.0] * (group - passes)


class Driver:
    """Plays actions against a scheduler; ``log`` records every decision, ``in_flight`` the served groups."""

    def __init__(self, sched, group: int = 8, on_next=None, on_obs=None) -> None:
        self.sched = sched
        self.group = group
        self.in_flight: list[str] = []
        self.log: list = []
        self.on_next = on_next
        self.on_obs = on_obs

    def play(self, acts) -> list:
        for a in acts:
            if a[0] == "next":
                if self.on_next:
                    self.on_next(self.sched, a[1])
                ids = self.sched.next(a[1])
                self.in_flight += ids
                self.log.append(("next", tuple(ids)))
            elif self.in_flight:
                env = self.in_flight.pop(a[1] % len(self.in_flight))
                passes = min(a[2], self.group)
                before = self.on_obs(self.sched, env) if self.on_obs else None
                obs = self.sched.observe(env, rewards_of(passes, self.group))
                self.log.append(("obs", obs.model_dump(), before))
        return self.log
