"""Rollout summaries: pass count out of k, pass rate, mean turns, and the unbiased pass@k estimator."""

from __future__ import annotations

from collections.abc import Iterable
from math import comb

from pydantic import BaseModel, Field


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c passes: 1 − C(n−c, k) / C(n, k) (Chen et al., 2021)."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"need 0 <= c <= n and k >= 1 (n={n}, c={c}, k={k})")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, have {n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


class RolloutSummary(BaseModel):
    task: str
    task_hash: str | None = None
    lineage: str | None = None
    generation: int | None = None
    agent: str
    model: str | None = None
    simulated: bool = False
    n: int = Field(description="counted rollouts (infrastructure failures are not counted)")
    passes: int
    pass_rate: float | None = None
    mean_turns: float | None = None
    pass_at_k: float | None = Field(default=None, description="pass@n: chance that at least one of n passes")
    errors: dict[str, int] = Field(default_factory=dict, description="error kind -> count, for non-ok rollouts")
    infrastructure_errors: int = Field(0, description="trials the infrastructure failed (not counted in n; retried "
                                                      "by the next run)")
    infrastructure_reasons: list[str] = Field(default_factory=list, description="why they failed, each reason once")
    mean_input_tokens: float | None = None
    mean_output_tokens: float | None = None
    cost_usd: float | None = Field(default=None, description="total over the counted rollouts, where the agent reported it")

    @property
    def label(self) -> str:
        return f"{self.passes}/{self.n}"


def summarize(task: str, rows: Iterable, **fields) -> RolloutSummary:
    """Summarize rollouts (store Rollout rows or anything with reward/turns/error_kind/passed)."""
    rows = list(rows)
    infra = [r for r in rows if str(r.error_kind or "ok") == "infrastructure_error"]
    rows = [r for r in rows if str(r.error_kind or "ok") != "infrastructure_error"]
    passes = sum(1 for r in rows if r.passed)
    turns = [r.turns for r in rows if r.turns is not None]
    errors: dict[str, int] = {}
    for r in rows:
        kind = str(r.error_kind or "ok")
        if kind != "ok":
            errors[kind] = errors.get(kind, 0) + 1
    n = len(rows)

    def mean(name: str) -> float | None:  # store rows say input_tokens; Harbor outcomes n_input_tokens
        values = [v for v in (getattr(r, name, getattr(r, f"n_{name}", None)) for r in rows) if v is not None]
        return sum(values) / len(values) if values else None

    costs = [r.cost_usd for r in rows if getattr(r, "cost_usd", None) is not None]
    return RolloutSummary(
        task=task, n=n, passes=passes, pass_rate=passes / n if n else None,
        mean_turns=sum(turns) / len(turns) if turns else None,
        mean_input_tokens=mean("input_tokens"), mean_output_tokens=mean("output_tokens"),
        cost_usd=sum(costs) if costs else None,
        pass_at_k=pass_at_k(n, passes, n) if n else None, errors=errors, infrastructure_errors=len(infra),
        infrastructure_reasons=infrastructure_reasons(infra), **fields)


def infrastructure_reasons(failed: Iterable) -> list[str]:
    """Each distinct reason of trials the infrastructure failed (store rows carry none; trial outcomes do)."""
    said = (getattr(r, "error_message", None) or getattr(r, "exception_type", None) for r in failed)
    return list(dict.fromkeys(r for r in said if r))
