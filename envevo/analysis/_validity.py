"""Validity of D_T: does the model-free difficulty rank environments the way agents fail on them?

Spearman's ρ between D_T and the measured failure rate (1 − pass rate) across every evaluated version,
per agent and pooled, with its sample size and a permutation p-value. ρ for L alone is reported next to
it, so one can see what the scenario and skill terms add beyond length. For simulated profiles the same ρ is also
taken against the exact expected failure rate (SIMULATION): the ranking without the sampling noise of k rollouts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from envevo.analysis._collect import VersionEval
from envevo.analysis._stats import spearman, spearman_p


class Validity(BaseModel):
    agent: str = Field(description="an agent, or 'all agents' (pooled rows)")
    simulated: bool
    n: int = Field(description="evaluated versions")
    rollouts: int
    rho: float | None = Field(None, description="Spearman ρ(D_T, failure rate)")
    p_value: float | None = None
    rho_L: float | None = Field(None, description="Spearman ρ(L, failure rate), for comparison")
    rho_exact: float | None = Field(None, description="simulated profiles: Spearman ρ(D_T, exact expected failure rate)")
    p_value_exact: float | None = None
    estimator: str | None = None


def _one(agent: str, rs: Sequence[VersionEval]) -> Validity:
    rs = [r for r in rs if r.D_T is not None]
    dts = [r.D_T for r in rs if r.D_T is not None]  # every r (filtered above); restated for the type
    fail = [1 - r.pass_rate for r in rs]
    exact = [1 - r.exact_pass_rate for r in rs if r.exact_pass_rate is not None]
    exact_ok = bool(rs) and len(exact) == len(rs)
    return Validity(agent=agent, simulated=any(r.simulated for r in rs), n=len(rs), rollouts=sum(r.n for r in rs),
                    rho=spearman(dts, fail), p_value=spearman_p(dts, fail),
                    rho_exact=spearman(dts, exact) if exact_ok else None,
                    p_value_exact=spearman_p(dts, exact) if exact_ok else None,
                    rho_L=spearman([r.L or 0 for r in rs], fail),
                    estimator=", ".join(sorted({r.estimator for r in rs if r.estimator})) or None)


def validity(rows: Sequence[VersionEval]) -> list[Validity]:
    by_agent: dict[str, list[VersionEval]] = defaultdict(list)
    for r in rows:
        by_agent[r.agent].append(r)
    out = [_one(a, rs) for a, rs in sorted(by_agent.items())]
    if len(by_agent) > 1:
        out.append(_one("all agents", rows))
    return out
