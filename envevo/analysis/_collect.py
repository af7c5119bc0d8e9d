"""One row per (evaluated version, agent): where the version sits in its lineage, its D_T, and its rollouts' summary.

Every analysis of the paper (difficulty across generations, direction effects, validity) is a grouping of
these rows, so they are read from the stores once.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from envevo.rollout import caught_facts, harmless_facts, is_simulated, read_episodes, summarize, task_expectation


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
    exact_pass_rate: float | None = Field(None, description="a simulated profile's exact expected pass rate (SIMULATION)")
    exact_turns: float | None = Field(None, description="a simulated profile's exact expected turns (SIMULATION)")


def _expectations(store, v, groups: dict) -> dict[str, tuple[float, float]]:
    """agent -> (exact pass rate, exact turns) for the simulated profiles among `groups` on a procedural version.
    The wrong variants' facts (caught by the self-check, harmless) come from every simulated episode logged for the
    version."""
    agents = [a for a, _ in groups if is_simulated(a)]
    if not agents:
        return {}
    from envevo.errors import TaskError
    from envevo.task import load_task

    try:
        task = load_task(store.task_dir(v.task_hash))
    except (TaskError, OSError):
        return {}
    rows = [r for (a, _), rs in groups.items() if is_simulated(a) for r in rs]
    episodes = read_episodes(r.trial_dir for r in rows)
    facts, harmless = caught_facts(episodes), harmless_facts(episodes)
    out = {}
    for a in agents:
        e = task_expectation(task, a, facts, harmless)
        if e is not None:
            out[a] = (e.pass_rate, e.turns)
    return out


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
                exact = _expectations(store, v, groups)
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
                        pass_rate=s.pass_rate, mean_turns=s.mean_turns,
                        exact_pass_rate=exact.get(agent, (None, None))[0], exact_turns=exact.get(agent, (None, None))[1]))
    return rows
