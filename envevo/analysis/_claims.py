"""The paper's qualitative claims, checked against the measured trends: each holds, fails, or cannot be
tested with the data at hand (None), with the evidence either way."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from envevo.analysis._generations import Trend
from envevo.analysis._validity import Validity


class Claim(BaseModel):
    claim: str
    holds: bool | None
    evidence: str


def _curve(t: Trend) -> str:
    zero = f", 0 from g{t.zero_at}" if t.zero_at is not None else ""
    return (f"{t.agent}/{t.effort}: {t.pass_rates[0]:.2f}→{t.pass_rates[-1]:.2f} over g{t.generations[0]}–g{t.generations[-1]}, "
            f"{t.rises} rise(s){zero}")


def _exact_curve(t: Trend) -> str:
    rates = t.exact_pass_rates or []
    return (f"{t.agent}/{t.effort}: {rates[0]:.3f}→{rates[-1]:.3f} over g{t.generations[0]}–g{t.generations[-1]}, "
            f"{t.exact_rises} rise(s)")


def _check(text: str, group: Sequence[Trend], test, curve=_curve) -> Claim:
    if not group:
        return Claim(claim=text, holds=None, evidence="no evaluated lineage for this case")
    return Claim(claim=text, holds=all(test(t) for t in group), evidence="; ".join(curve(t) for t in group))


def claims(trends: Sequence[Trend], validity: Sequence[Validity]) -> list[Claim]:
    trends = [t for t in trends if len(t.generations) >= 3]
    hard = [t for t in trends if t.effort in ("high", "max")]
    low = [t for t in trends if t.effort == "low"]
    out = [
        _check("At high and max effort the pass rate declines monotonically", hard,
               lambda t: t.monotone and t.pass_rates[-1] < t.pass_rates[0]),
        _check("At high and max effort the pass rate reaches 0 within the lineage", hard, lambda t: t.zero_at is not None),
        _check("At low effort the pass rate fluctuates and never reaches 0", low, lambda t: t.rises > 0 and t.zero_at is None),
        _check("Mean turns rise across generations", trends,
               lambda t: t.turns_first is not None and t.turns_last is not None and t.turns_last > t.turns_first),
    ]
    # Simulated profiles: the same shape claims on the exact expected pass rate, which has no sampling noise, so a
    # rise there is the engine's doing (an edit that made the task easier for the profile), not the sample's.
    exact_hard = [t for t in hard if t.exact_pass_rates]
    exact_low = [t for t in low if t.exact_pass_rates]
    if exact_hard or exact_low:
        out += [
            _check("SIMULATION, exact expectation: at high and max effort the pass rate declines monotonically",
                   exact_hard, lambda t: t.exact_monotone and t.exact_pass_rates[-1] < t.exact_pass_rates[0], _exact_curve),
            _check("SIMULATION, exact expectation: at low effort the pass rate fluctuates (rises at least once)",
                   exact_low, lambda t: (t.exact_rises or 0) > 0, _exact_curve),
        ]
    efforts = sorted({t.effort for t in trends if t.effort})
    agree = []
    for e in efforts:
        ts = [t for t in trends if t.effort == e]
        if len({t.agent for t in ts}) >= 2:
            agree.append((e, ts))
    if agree:
        ok = all(len({t.monotone for t in ts}) == 1 and all((t.rho_generation or 0) < 0 for t in ts) for _, ts in agree)
        ev = "; ".join(f"{e}: " + ", ".join(f"{t.agent} ρ(gen)={_rounded(t.rho_generation, 2)}"
                                            f"{' monotone' if t.monotone else ''}" for t in ts) for e, ts in agree)
        out.append(Claim(claim="The shape is the same for every agent (declining; monotone for all or for none)", holds=ok, evidence=ev))
    else:
        out.append(Claim(claim="The shape is the same for every agent", holds=None, evidence="fewer than two agents per effort"))
    pooled = next((v for v in validity if v.agent == "all agents"), validity[0] if validity else None)
    if pooled is None or pooled.rho is None:
        out.append(Claim(claim="D_T ranks environments by measured failure (Spearman ρ > 0, p < 0.05)", holds=None,
                         evidence="too few evaluated versions"))
    else:
        out.append(Claim(claim="D_T ranks environments by measured failure (Spearman ρ > 0, p < 0.05)",
                         holds=pooled.rho > 0 and (pooled.p_value or 1) < 0.05,
                         evidence=f"{pooled.agent}: ρ={pooled.rho:.3f}, p={pooled.p_value:.4f}, n={pooled.n} versions "
                                  f"({pooled.rollouts} rollouts); ρ for L alone {_rounded(pooled.rho_L, 3)}"
                                  + ("" if pooled.rho_exact is None else
                                     f"; against the exact expected failure (SIMULATION) ρ={pooled.rho_exact:.3f}")))
    return out


def _rounded(x: float | None, digits: int) -> float | None:
    return x if x is None else round(x, digits)
