"""One row per (evaluated version, agent): where the version sits in its lineage, its D_T, and its rollouts' summary.

Every analysis of the paper (difficulty across generations, direction effects, validity) is a grouping of
these rows, so they are read from the stores once.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from envevo.rollout import summarize


class VersionEval(BaseModel):
    run: str
    lineage: str
    generation: int
    task_hash: str
    parent_hash: str | None = None
    effort: str | None = Field(None, description="the run's effort (low | high | max)")
    direction: str | None = Field(None, description="the direction that produced this version (None for seeds)")
    restricted: bool = Field(False, description="the run allowed only some directions (a single-lever experiment)")
    mutated: list[str] = Field(default_factory=list)
    L: int | None = None
    D_T: float | None = None
    estimator: str | None = None
    agent: str
    model: str | None = None
    simulated: bool
    n: int
    passes: int
    pass_rate: float
    mean_turns: float | None = None


def collect(stores: Iterable) -> list[VersionEval]:
    """Rows for every version of every lineage that has counted rollouts, per (agent, model)."""
    rows: list[VersionEval] = []
    for store in stores:
        config = store.run_config() or {}
        restricted = len(set(config.get("directions") or ["length", "scenario", "skill"])) < 3
        by_hash: dict[str, list] = {}
        for r in store.rollouts():
            by_hash.setdefault(r.task_hash, []).append(r)
        for lin in store.lineages():
            for v in store.versions(lin.id):
                groups: dict[tuple[str, str | None], list] = {}
                for r in by_hash.get(v.task_hash, []):
                    groups.setdefault((r.agent, r.model), []).append(r)
                for (agent, model), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
                    s = summarize(v.task_hash, rs, agent=agent)
                    if not s.n:
                        continue
                    rows.append(VersionEval(
                        run=str(store.run_dir), lineage=lin.id, generation=v.generation, task_hash=v.task_hash,
                        parent_hash=v.parent_hash, effort=v.effort or config.get("effort"), direction=v.direction,
                        restricted=restricted,
                        mutated=list(v.mutated), L=v.L, D_T=v.D_T,
                        estimator=v.difficulty.estimator if v.difficulty is not None else None,
                        agent=agent, model=model, simulated=any(r.simulated for r in rs), n=s.n, passes=s.passes,
                        pass_rate=s.pass_rate, mean_turns=s.mean_turns))
    return rows
