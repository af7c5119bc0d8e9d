"""Difficulty across generations, the paper's Figure 3 analogue: pass rate and mean turns per generation,
one series per (agent, effort), averaged over the lineages evaluated at that generation. Runs restricted to
some directions (single-lever experiments) are left out: their generations are not the method's lineages.

The trend of each series says whether the paper's claims hold here: a monotone decline of the pass rate at
high and max effort (reaching 0 within the lineage), fluctuation at low effort, and the same shape for
every agent.

For simulated profiles each point also carries the exact expected pass rate and turns (`envevo.rollout._exact`,
SIMULATION): the sampled curve is that plus binomial noise, so where the two disagree in shape the noise decided it,
and the exact curve shows the engine's own effect.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from envevo.analysis._collect import VersionEval
from envevo.analysis._stats import spearman


class GenerationPoint(BaseModel):
    agent: str
    model: str | None = None
    simulated: bool
    effort: str | None = None
    generation: int
    tasks: int = Field(description="versions (one per lineage) evaluated at this generation")
    rollouts: int
    pass_rate: float
    mean_turns: float | None = None
    exact_pass_rate: float | None = Field(None, description="mean exact expected pass rate (simulated profiles)")
    exact_turns: float | None = Field(None, description="mean exact expected turns (simulated profiles)")


class Trend(BaseModel):
    agent: str
    model: str | None = None
    simulated: bool
    effort: str | None = None
    generations: list[int]
    pass_rates: list[float]
    mean_turns: list[float | None]
    monotone: bool = Field(description="the pass rate never rises from one evaluated generation to the next")
    rises: int = Field(description="how many times the pass rate rises between consecutive evaluated generations")
    max_rise: float
    zero_at: int | None = Field(None, description="first generation from which the pass rate stays 0")
    rho_generation: float | None = Field(None, description="Spearman ρ of pass rate vs generation (−1: steady decline)")
    turns_first: float | None = None
    turns_last: float | None = None
    exact_pass_rates: list[float] | None = Field(None, description="the exact curve (simulated profiles)")
    exact_monotone: bool | None = Field(None, description="the exact curve never rises")
    exact_rises: int | None = None


def _rises(rates: Sequence[float]) -> list[float]:
    return [b - a for a, b in zip(rates, rates[1:], strict=False) if b > a + 1e-12]


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None


def generation_points(rows: Sequence[VersionEval]) -> list[GenerationPoint]:
    cells: dict[tuple, list[VersionEval]] = defaultdict(list)
    for r in rows:
        if not r.restricted:
            cells[(r.agent, r.model or "", r.effort or "", r.generation)].append(r)
    points = []
    for (agent, model, effort, gen), rs in sorted(cells.items()):
        turns = [r.mean_turns for r in rs if r.mean_turns is not None]
        points.append(GenerationPoint(
            agent=agent, model=model or None, simulated=any(r.simulated for r in rs), effort=effort or None,
            generation=gen, tasks=len(rs), rollouts=sum(r.n for r in rs),
            pass_rate=sum(r.pass_rate for r in rs) / len(rs), mean_turns=sum(turns) / len(turns) if turns else None,
            exact_pass_rate=_mean([r.exact_pass_rate for r in rs]), exact_turns=_mean([r.exact_turns for r in rs])))
    return points


def trends(points: Sequence[GenerationPoint]) -> list[Trend]:
    series: dict[tuple, list[GenerationPoint]] = defaultdict(list)
    for p in points:
        series[(p.agent, p.model or "", p.effort or "")].append(p)
    out = []
    for (agent, model, effort), ps in sorted(series.items()):
        ps = sorted(ps, key=lambda p: p.generation)
        rates = [p.pass_rate for p in ps]
        rises = _rises(rates)
        exact = [p.exact_pass_rate for p in ps]
        exact_rates = [e for e in exact if e is not None] if all(e is not None for e in exact) else None
        zero_at = None
        for i in range(len(ps)):
            if all(r == 0 for r in rates[i:]):
                zero_at = ps[i].generation
                break
        turns = [p.mean_turns for p in ps]
        out.append(Trend(
            agent=agent, model=model or None, simulated=any(p.simulated for p in ps), effort=effort or None,
            generations=[p.generation for p in ps], pass_rates=rates, mean_turns=turns, monotone=not rises,
            rises=len(rises), max_rise=max(rises, default=0.0), zero_at=zero_at,
            rho_generation=spearman([p.generation for p in ps], rates),
            turns_first=turns[0] if turns else None, turns_last=turns[-1] if turns else None,
            exact_pass_rates=exact_rates, exact_monotone=None if exact_rates is None else not _rises(exact_rates),
            exact_rises=None if exact_rates is None else len(_rises(exact_rates))))
    return out
