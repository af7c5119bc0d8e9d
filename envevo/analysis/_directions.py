"""Direction effects, the paper's Table 1 analogue: what one evolution step in each direction does to the
pass rate, the turns and the components it mutates.

A step is a version and its parent, both evaluated by the same agent. "single step" counts only the first
generation (seed → g1: the paper's controlled single-step experiment); "all steps" averages every step of
the lineages. Mutation rates are the fraction of steps that changed each component. For simulated profiles the
step's exact Δ expected pass rate is given too (SIMULATION): the edit's effect without the sampling noise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel

from envevo.analysis._collect import VersionEval
from envevo.analysis._mutation import RATE_COMPONENTS, TOTAL_COMPONENTS
from envevo.analysis._stats import mean_ci


class DirectionEffect(BaseModel):
    scope: str  # "single step" | "all steps"
    direction: str
    agent: str
    simulated: bool
    steps: int
    d_pass: float | None = None
    d_pass_ci: float | None = None
    d_turns: float | None = None
    d_turns_ci: float | None = None
    d_DT: float | None = None
    d_pass_exact: float | None = None
    mutation: dict[str, float]
    total_mutation: float


def direction_effects(rows: Sequence[VersionEval]) -> list[DirectionEffect]:
    by_key = {(r.run, r.lineage, r.task_hash, r.agent, r.model): r for r in rows}
    steps: dict[tuple[str, str, str], list[tuple[VersionEval, VersionEval]]] = defaultdict(list)
    for r in rows:
        if r.direction is None or r.parent_hash is None:
            continue
        parent = by_key.get((r.run, r.lineage, r.parent_hash, r.agent, r.model))
        if parent is None:
            continue  # the parent was not evaluated by this agent (e.g. only every 3rd generation was)
        if parent.generation != r.generation - 1:
            continue
        steps[("all steps", r.direction, r.agent)].append((parent, r))
        if r.generation == 1:
            steps[("single step", r.direction, r.agent)].append((parent, r))
    out = []
    for (scope, direction, agent), pairs in sorted(steps.items(), key=lambda kv: (kv[0][0] != "single step", kv[0][1:])):
        d_pass, ci_pass = mean_ci([b.pass_rate - a.pass_rate for a, b in pairs])
        turns = [b.mean_turns - a.mean_turns for a, b in pairs if a.mean_turns is not None and b.mean_turns is not None]
        d_turns, ci_turns = mean_ci(turns)
        dts = [b.D_T - a.D_T for a, b in pairs if a.D_T is not None and b.D_T is not None]
        exact = [b.exact_pass_rate - a.exact_pass_rate for a, b in pairs
                 if a.exact_pass_rate is not None and b.exact_pass_rate is not None]
        n = len(pairs)
        out.append(DirectionEffect(
            scope=scope, direction=direction, agent=agent, simulated=any(b.simulated for _, b in pairs), steps=n,
            d_pass=d_pass, d_pass_ci=ci_pass, d_turns=d_turns, d_turns_ci=ci_turns,
            d_DT=sum(dts) / len(dts) if dts else None,
            d_pass_exact=sum(exact) / n if len(exact) == n else None,
            mutation={c: sum(c in b.mutated for _, b in pairs) / n for c in RATE_COMPONENTS},
            total_mutation=sum(any(c in b.mutated for c in TOTAL_COMPONENTS) for _, b in pairs) / n))
    return out
