"""Difficulty across generations (the paper's Figure 3 analogue): pass rate and mean turns per generation, per agent."""

from __future__ import annotations

from pydantic import BaseModel

from envevo.rollout._stats import summarize


class GenerationPoint(BaseModel):
    agent: str
    model: str | None = None
    simulated: bool
    effort: str | None = None
    generation: int
    tasks: int
    rollouts: int
    pass_rate: float | None = None
    mean_turns: float | None = None


def by_generation(store) -> list[GenerationPoint]:
    """Average over a run's lineages of each version's pass rate and mean turns, per (agent, model, generation)."""
    effort = (store.run_config() or {}).get("effort")
    versions = {v.task_hash: v for lin in store.lineages() for v in store.versions(lin.id)}
    groups: dict[tuple, list] = {}
    for r in store.rollouts():
        if r.task_hash in versions:
            groups.setdefault((r.agent, r.model, versions[r.task_hash].generation, r.task_hash), []).append(r)
    cells: dict[tuple, list] = {}
    for (agent, model, gen, h), rows in groups.items():
        s = summarize(h, rows, agent=agent)
        if s.n:
            cells.setdefault((agent, model, gen), []).append((s, any(r.simulated for r in rows)))
    points = []
    for (agent, model, gen), items in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        rates = [s.pass_rate for s, _ in items]
        turns = [s.mean_turns for s, _ in items if s.mean_turns is not None]
        points.append(GenerationPoint(agent=agent, model=model, simulated=any(sim for _, sim in items),
                                      effort=str(effort) if effort else None, generation=gen, tasks=len(items),
                                      rollouts=sum(s.n for s, _ in items), pass_rate=sum(rates) / len(rates),
                                      mean_turns=sum(turns) / len(turns) if turns else None))
    return points
