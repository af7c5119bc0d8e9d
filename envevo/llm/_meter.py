"""Tokens and cost per role and lineage, and the per-lineage budget caps.

Every model response that comes back is metered, including the ones a role then rejects (malformed output
costs tokens too). Who spent it comes from a context variable the engine sets around each role call
(`Meter.scope`), so lineages evolving concurrently are attributed correctly without passing ids through
pydantic-ai. The budget is checked before each request: a lineage that has reached a cap gets no more calls.
The work outside lineages (a seed's extraction and attack, and everything `verify`, `audit` and `seeds select` ask
a model) is one more budget under the same caps, so no model call is ever uncapped when a cap is set.

A cost cap is only a cap if every response has a cost: `require_prices` refuses, before any work, a `--max-cost`
run with a model that has neither a configured price (`--price`, `[llm.prices]`) nor a list price in
genai-prices (most self-hosted models), instead of metering it at $0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from envevo.llm._config import ModelSpec, Price
from envevo.llm._errors import BudgetExceeded, LLMConfigError


class Scope(BaseModel):
    role: str
    lineage: str | None = None
    generation: int | None = None


class UsageRecord(BaseModel):
    """One model response's usage, attributed to a role (and lineage generation when known)."""

    role: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None
    lineage: str | None = None
    generation: int | None = None
    estimated: bool = False  # counted from what arrived (an answer abandoned mid-stream), not reported by the server


@dataclass
class Spent:
    tokens: int = 0
    cost_usd: float = 0.0


_scope: ContextVar[Scope | None] = ContextVar("envevo_llm_scope", default=None)


@dataclass
class Tally:
    """The usage of one piece of work (an attack on one task), counted while it runs beside others."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


# The tallies open in this context (`Meter.tally`): each counts every response recorded under it, whatever its role.
_tallies: ContextVar[tuple[Tally, ...]] = ContextVar("envevo_llm_tallies", default=())


class Meter:
    """Accumulates usage, enforces caps, and hands each record to `on_usage` (e.g. the lineage store)."""

    def __init__(
        self,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        on_usage: Callable[[UsageRecord], None] | None = None,
    ):
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens
        self.on_usage = on_usage
        self.records: list[UsageRecord] = []
        self._spent: dict[str | None, Spent] = {}

    @contextmanager
    def scope(self, role: str, lineage: str | None = None, generation: int | None = None) -> Iterator[Scope]:
        s = Scope(role=role, lineage=lineage, generation=generation)
        token = _scope.set(s)
        try:
            yield s
        finally:
            _scope.reset(token)

    @staticmethod
    @contextmanager
    def tally() -> Iterator[Tally]:
        """Count the responses recorded in this context (and the tasks it starts) until the block ends: the work of
        one task among many running at once, which a role or lineage scope cannot tell apart."""
        t = Tally()
        token = _tallies.set((*_tallies.get(), t))
        try:
            yield t
        finally:
            _tallies.reset(token)

    @staticmethod
    def current() -> Scope:
        return _scope.get() or Scope(role="unscoped")

    def preload(self, lineage: str, tokens: int, cost_usd: float) -> None:
        """What a lineage spent in earlier processes (a resumed run keeps its budget)."""
        self._spent[lineage] = Spent(tokens, cost_usd)

    def spent(self, lineage: str | None) -> Spent:
        return self._spent.get(lineage, Spent())

    def over_budget(self, lineage: str | None) -> str | None:
        """Why this lineage (None: the work outside lineages) may not spend more, or None."""
        s = self.spent(lineage)
        who = f"lineage {lineage}" if lineage is not None else "the model calls outside lineages"
        if self.max_tokens is not None and s.tokens >= self.max_tokens:
            return f"{who} used {s.tokens} tokens, reaching its cap of {self.max_tokens} (--max-tokens)"
        if self.max_cost_usd is not None and s.cost_usd >= self.max_cost_usd:
            return f"{who} spent ${s.cost_usd:.4f}, reaching its cap of ${self.max_cost_usd:.4f} (--max-cost)"
        return None

    def check(self) -> None:
        """Raise BudgetExceeded if the current scope's lineage has reached a cap."""
        scope = self.current()
        why = self.over_budget(scope.lineage)
        if why is not None:
            raise BudgetExceeded(scope.lineage, why)

    def record(self, model: str, input_tokens: int, output_tokens: int, cost_usd: float | None,
               estimated: bool = False) -> UsageRecord:
        scope = self.current()
        rec = UsageRecord(role=scope.role, model=model, input_tokens=input_tokens, output_tokens=output_tokens,
                          cost_usd=cost_usd, lineage=scope.lineage, generation=scope.generation, estimated=estimated)
        self.records.append(rec)
        s = self._spent.setdefault(scope.lineage, Spent())
        s.tokens += input_tokens + output_tokens
        s.cost_usd += cost_usd or 0.0
        for t in _tallies.get():
            t.calls += 1
            t.input_tokens += input_tokens
            t.output_tokens += output_tokens
        if self.on_usage is not None:
            self.on_usage(rec)
        return rec

    def totals(self) -> dict[str, dict[str, float]]:
        """Per role: calls, input and output tokens, cost (a quick summary for logs and tests)."""
        out: dict[str, dict[str, float]] = {}
        for r in self.records:
            t = out.setdefault(r.role, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
            t["calls"] += 1
            t["input_tokens"] += r.input_tokens
            t["output_tokens"] += r.output_tokens
            t["cost_usd"] += r.cost_usd or 0.0
        return out


def usage_rows(records: Iterable[UsageRecord]) -> list[dict[str, Any]]:
    """Calls, tokens and cost per (role, model), in first-seen order: the usage table a command prints. A cost is None
    unless some response had one; `estimated_calls` counts answers abandoned mid-stream, whose tokens were counted
    from what arrived."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        t = rows.setdefault((r.role, r.model), {"role": r.role, "model": r.model, "calls": 0, "input_tokens": 0,
                                                "output_tokens": 0, "cost_usd": None, "estimated_calls": 0})
        t["calls"] += 1
        t["estimated_calls"] += int(getattr(r, "estimated", False))  # an estimator's own meter may not say
        t["input_tokens"] += r.input_tokens
        t["output_tokens"] += r.output_tokens
        if r.cost_usd is not None:
            t["cost_usd"] = (t["cost_usd"] or 0.0) + r.cost_usd
    return list(rows.values())


def estimate_tokens(text: str) -> int:
    """Tokens of `text` when no server counted them: about 4 characters a token for English and code."""
    return (len(text) + 3) // 4


def has_list_price(spec: ModelSpec) -> bool:
    """Whether genai-prices (the table pydantic-ai costs responses with) knows this model."""
    from genai_prices import Usage, calc_price

    try:
        calc_price(Usage(input_tokens=1, output_tokens=1), spec.name, provider_id=spec.provider)
    except LookupError:
        return False
    return True


def require_prices(max_cost_usd: float | None, priced: list[tuple[ModelSpec, Price | None]]) -> None:
    """With a cost cap, every model must have a price; LLMConfigError naming the fix otherwise."""
    if max_cost_usd is None:
        return
    missing = sorted({spec.label for spec, price in priced if price is None and not has_list_price(spec)})
    if missing:
        example = missing[0]
        raise LLMConfigError(
            f"--max-cost needs a price for {', '.join(missing)}, which has no list price: give one with "
            f"--price {example}=IN,OUT (USD per million input and output tokens; 0,0 for a free local server), "
            "or cap tokens with --max-tokens instead")
