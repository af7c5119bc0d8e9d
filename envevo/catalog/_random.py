"""Procedural seeds: a random, typical chain for a goal category."""

from __future__ import annotations

import random

from envevo.catalog._blocks import build_blocks
from envevo.catalog._chain import Chain, ChainStep, derive_seed
from envevo.catalog._goals import GOAL_CATEGORIES, goal_text
from envevo.catalog._graph import SCENARIOS, SKILLS, compatible
from envevo.catalog._kinds import Kind
from envevo.catalog._prior import CatalogPrior
from envevo.catalog._solve import harmless_steps
from envevo.errors import UserError


def goal_categories() -> list[str]:
    return list(GOAL_CATEGORIES)


def random_chain(goal_category: str | None, length: int, seed: int) -> Chain:
    """A chain of `length` steps drawn from p_T (so seeds are typical and evolution makes them rarer)."""
    if goal_category is not None and goal_category not in GOAL_CATEGORIES:
        raise UserError(f"unknown goal category {goal_category!r}; choose one of: {', '.join(GOAL_CATEGORIES)}")
    if not 1 <= length <= 12:
        raise UserError(f"--length must be between 1 and 12, got {length}")
    rng = random.Random(f"envevo-seed|{goal_category}|{length}|{seed}")
    category = goal_category or rng.choice(sorted(GOAL_CATEGORIES))
    goal = goal_text(category)
    prior = CatalogPrior()
    fallback: Chain | None = None  # the first chain that generates, should none have every step's mistake checked
    for attempt in range(200):
        steps, prev, used = [], Kind.NONE, set()
        for t in range(length):
            last = t == length - 1
            opts = [(a, b) for a in SCENARIOS for b in SKILLS if a not in used and compatible(a, b)
                    and prev in SKILLS[b].accepts and (last or SKILLS[b].out is not Kind.NUMBER)]
            if not opts:
                break
            weights = [prior.p_scenario(a, goal) * prior.p_skill(b, a, goal) for a, b in opts]
            a, b = rng.choices(opts, weights=weights)[0]
            steps.append(ChainStep(scenario=a, skill=b, seed=derive_seed(seed, "seed-step", attempt, t)))
            used.add(a)
            prev = SKILLS[b].out
        if len(steps) != length:
            continue
        chain = Chain(goal=goal, category=category, seed=seed, steps=tuple(steps))
        try:
            blocks = build_blocks(chain)
        except RuntimeError:
            continue
        if not harmless_steps(blocks):
            return chain
        fallback = fallback or chain  # a step whose wrong variant gives the right output: draw again
    if fallback is not None:
        return fallback
    raise UserError(f"could not draw a {length}-step chain for {category}; try another --seed")
