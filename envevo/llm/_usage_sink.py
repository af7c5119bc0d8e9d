"""Connect the meter to a lineage store: every response's usage becomes a `usage` row, and a resumed run
starts each lineage's budget from what the store says it already spent."""

from __future__ import annotations

from envevo.llm._meter import Meter, UsageRecord


def attach_store(meter: Meter, store) -> None:
    spent: dict[str, list[float]] = {}
    for u in store.usage():
        if u.lineage_id is not None:
            s = spent.setdefault(u.lineage_id, [0, 0.0])
            s[0] += u.input_tokens + u.output_tokens
            s[1] += u.cost_usd or 0.0
    for lineage, (tokens, cost) in spent.items():
        meter.preload(lineage, int(tokens), cost)

    def write(rec: UsageRecord) -> None:
        store.add_usage(rec.role, input_tokens=rec.input_tokens, output_tokens=rec.output_tokens, model=rec.model,
                        cost_usd=rec.cost_usd, lineage_id=rec.lineage, generation=rec.generation,
                        estimated=rec.estimated)

    meter.on_usage = write
