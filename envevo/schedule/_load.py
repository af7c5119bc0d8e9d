"""Lineage pools for schedulers: from a run's lineage store, or from a fast synthetic generator.

The synthetic generator evolves ξ directly over the procedural catalog (no task files are written): a seed
chain of 2–4 typical (σ, κ) pairs drawn from the catalog prior p_T, then one generation per step with the
three directions of the method (length inserts a pair, scenario swaps σ for a rarer compatible one, skill
swaps κ for a rarer compatible one), directions shuffled anew each generation. D_T is exact under the
catalog prior, as in the procedural engine. It is for quick simulations and tests, not a substitute for
verified lineages.
"""

from __future__ import annotations

import os
import random
from functools import cache
from typing import TYPE_CHECKING

from envevo.schedule._records import EnvRecord, ScheduleError
from envevo.trace import Step, Trace

if TYPE_CHECKING:
    from envevo.catalog import CatalogPrior

Pairs = list[tuple[str, str]]


def load_lineages(run_dir: str | os.PathLike[str], *, verified_only: bool = True) -> list[list[EnvRecord]]:
    """Every committed version of every lineage in RUN_DIR's store, as scheduler records.

    Ids are export names (``<lineage>__g<NN>``). Versions that failed verification are left out unless
    ``verified_only=False``; a lineage left with no version is dropped.
    """
    from envevo.store import LineageStore, export_name

    store = LineageStore.open(run_dir, create=False)
    try:
        out: list[list[EnvRecord]] = []
        for lin in store.lineages():
            recs = [
                EnvRecord(
                    id=export_name(v.lineage_id, v.generation),
                    lineage=v.lineage_id,
                    generation=v.generation,
                    trace=v.trace,
                    D_T=v.D_T,
                    direction=v.direction,
                    task_hash=v.task_hash,
                )
                for v in store.versions(lin.id)
                if v.verified or not verified_only
            ]
            if recs:
                out.append(recs)
    finally:
        store.close()
    if not out:
        raise ScheduleError(
            f"{run_dir} has no verified versions to schedule; run `envevo evolve` first "
            "(or pass verified_only=False)"
        )
    return out


# ---------------------------------------------------------------------------------------------- synthetic


@cache
def _catalog() -> tuple[CatalogPrior, Pairs, dict[str, str]]:
    from envevo.catalog import GOAL_CATEGORIES, SCENARIOS, SKILLS, CatalogPrior, compatible

    prior = CatalogPrior()
    pairs = [(s, k) for s in SCENARIOS for k in SKILLS if compatible(s, k)]
    goals = {c: f"{v['title']}: {v['goal']}" for c, v in GOAL_CATEGORIES.items()}
    return prior, pairs, goals


@cache
def _goal_weights(goal: str) -> list[float]:
    """p_T(σ|g)·p_T(κ|σ,g) of every compatible pair: how typical a seed step is for the goal."""
    prior, pairs, _ = _catalog()
    return [prior.p_scenario(s, goal) * prior.p_skill(k, s, goal) for s, k in pairs]


def _evolve_once(rng: random.Random, goal: str, pairs: Pairs, max_len: int) -> tuple[str | None, Pairs]:
    """One generation: the first direction (in a fresh shuffled order) that can make an edit."""
    prior, all_pairs, _ = _catalog()
    from envevo.catalog import compatible

    directions = ["length", "scenario", "skill"]
    rng.shuffle(directions)
    used = {s for s, _ in pairs}
    for d in directions:
        if d == "length" and len(pairs) < max_len:
            opts = [p for p in all_pairs if p[0] not in used]
            if opts:
                new = rng.choice(opts)
                at = rng.randint(0, len(pairs))
                return d, pairs[:at] + [new] + pairs[at:]
        elif d == "scenario":
            i = rng.randrange(len(pairs))
            s, k = pairs[i]
            cur = prior.neg_log_p_scenario(s, goal)
            scenarios = [a for a, b in all_pairs if b == k and a not in used and prior.neg_log_p_scenario(a, goal) > cur]
            if scenarios:
                return d, pairs[:i] + [(rng.choice(scenarios), k)] + pairs[i + 1:]
        elif d == "skill":
            i = rng.randrange(len(pairs))
            s, k = pairs[i]
            cur = prior.neg_log_p_skill(k, s, goal)
            skills = [b for a, b in all_pairs if a == s and b != k and compatible(s, b)
                      and prior.neg_log_p_skill(b, s, goal) > cur]
            if skills:
                return d, pairs[:i] + [(s, rng.choice(skills))] + pairs[i + 1:]
    return None, pairs


def synthetic_lineages(
    n_lineages: int = 16,
    generations: int = 15,
    *,
    seed: int = 0,
    prefix: str = "syn",
    seed_length: tuple[int, int] = (2, 4),
    max_length: int = 12,
) -> list[list[EnvRecord]]:
    """``n_lineages`` lineages of ``generations + 1`` versions each (fewer if a lineage can no longer be
    edited), ξ over the procedural catalog, D_T under its prior. Deterministic for ``seed``; different
    ``prefix`` or ``seed`` values give disjoint pools (use one for training, another for held-out)."""
    if n_lineages < 1 or generations < 0:
        raise ScheduleError("a synthetic pool needs at least one lineage and generations >= 0")
    prior, all_pairs, goals = _catalog()
    cats = sorted(goals)
    out: list[list[EnvRecord]] = []
    for i in range(n_lineages):
        rng = random.Random(f"envevo-synthetic|{seed}|{prefix}|{i}")
        goal = goals[rng.choice(cats)]
        weights = _goal_weights(goal)
        length = rng.randint(*seed_length)
        pairs: list[tuple[str, str]] = []
        while len(pairs) < length:
            s, k = rng.choices(all_pairs, weights=weights)[0]
            if s not in {a for a, _ in pairs}:
                pairs.append((s, k))
        name = f"{prefix}{i:03d}"
        recs = []
        direction = None
        for g in range(generations + 1):
            if g > 0:
                direction, new = _evolve_once(rng, goal, pairs, max_length)
                if direction is None:
                    break
                pairs = new
            trace = Trace(goal=goal, steps=tuple(Step(scenario=s, skill=k) for s, k in pairs))
            recs.append(EnvRecord(id=f"{name}__g{g:02d}", lineage=name, generation=g, trace=trace,
                                  D_T=round(prior.difficulty(trace).D_T, 6), direction=direction))
        out.append(recs)
    return out
