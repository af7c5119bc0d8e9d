"""All analyses of a set of evaluated runs in one object: what `envevo analyze` prints and the report draws."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from envevo.analysis._claims import Claim, claims
from envevo.analysis._collect import VersionEval, collect
from envevo.analysis._directions import DirectionEffect, direction_effects
from envevo.analysis._generations import GenerationPoint, Trend, generation_points, trends
from envevo.analysis._validity import Validity, validity


class Study(BaseModel):
    runs: list[str]
    simulated: bool
    rows: list[VersionEval]
    points: list[GenerationPoint]
    trends: list[Trend]
    directions: list[DirectionEffect]
    validity: list[Validity]
    claims: list[Claim]


def analyze(stores: Iterable) -> Study:
    stores = list(stores)
    rows = collect(stores)
    points = generation_points(rows)
    trend = trends(points)
    valid = validity(rows)
    return Study(runs=[str(s.run_dir) for s in stores], simulated=any(r.simulated for r in rows), rows=rows,
                 points=points, trends=trend, directions=direction_effects(rows), validity=valid,
                 claims=claims(trend, valid))
