"""The three evolution directions as exact edits of a chain, at each effort.

- length: insert type-compatible pairs (low: exactly one; high: one contiguous span; max: several places);
- scenario: replace scenarios and keep their skills;
- skill: replace skills and keep their scenarios.

Every candidate must be a type-correct chain that raises D_T and passes the loop's own checks
(check_direction, check_effort). The default policy prefers small edits, and among edits of one size
samples weighted toward larger D_T gains (rarer scenarios and skills), using only the caller's random
stream; a drawn chain that cannot be generated is discarded and another drawn.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from envevo.catalog import (
    SCENARIOS,
    SKILLS,
    Block,
    CatalogPrior,
    Chain,
    ChainStep,
    Kind,
    build_blocks,
    build_step,
    compatible,
    derive_seed,
    harmless_steps,
    pairs_problems,
    pin_of,
    scenarios_for,
    skills_for,
)
from envevo.evolve.engines.procedural._target import WeaknessTarget
from envevo.trace import Direction, Effort, Step, Trace, check_direction, check_effort

Pairs = list[tuple[str, str]]
_SAMPLES = 400  # random multi-pair edits tried per call (single-pair edits are enumerated exhaustively)


def _trace(goal: str, pairs: Pairs) -> Trace:
    return Trace(goal=goal, steps=tuple(Step(scenario=a, skill=b) for a, b in pairs))


def _cost(prior: CatalogPrior, goal: str, pairs: Pairs) -> float:
    return sum(prior.pair_cost(a, b, goal) for a, b in pairs)


def _all_pairs() -> list[tuple[str, str]]:
    return [(sc, sk) for sc in SCENARIOS for sk in SKILLS if compatible(sc, sk)]


def _span(rng: random.Random, pairs: Pairs, i: int, m: int) -> Pairs | None:
    """m new pairs to insert before position i, chained so each reads what the previous writes."""
    used = {a for a, _ in pairs}
    prev = Kind.NONE if i == 0 else SKILLS[pairs[i - 1][1]].out
    out: Pairs = []
    options = _all_pairs()
    for j in range(m):
        fit = [(a, b) for a, b in options if a not in used and prev in SKILLS[b].accepts
               and (SKILLS[b].out is not Kind.NUMBER or (j == m - 1 and i == len(pairs)))]
        if not fit:
            return None
        a, b = rng.choice(fit)
        out.append((a, b))
        used.add(a)
        prev = SKILLS[b].out
    return out


def _length(rng: random.Random, pairs: Pairs, effort: Effort) -> Iterator[Pairs]:
    if effort is Effort.LOW or effort is Effort.HIGH:
        for i in range(len(pairs) + 1):
            for p in _all_pairs():
                yield pairs[:i] + [p] + pairs[i:]
    if effort is Effort.HIGH:
        for _ in range(_SAMPLES):
            i, m = rng.randint(0, len(pairs)), rng.randint(2, 3)
            span = _span(rng, pairs, i, m)
            if span:
                yield pairs[:i] + span + pairs[i:]
    if effort is Effort.MAX:
        for _ in range(_SAMPLES):
            new = list(pairs)
            places = sorted(rng.sample(range(len(pairs) + 1), min(len(pairs) + 1, rng.randint(1, 3))), reverse=True)
            for i in places:  # from the back, so earlier positions stay valid
                span = _span(rng, new, i, rng.randint(1, 2))
                if span:
                    new = new[:i] + span + new[i:]
            yield new


def _swap(rng: random.Random, pairs: Pairs, effort: Effort, direction: Direction) -> Iterator[Pairs]:
    def options(i: int, current: Pairs) -> list[tuple[str, str]]:
        sc, sk = current[i]
        if direction is Direction.SCENARIO:
            used = {a for j, (a, _) in enumerate(current) if j != i}
            return [(a, sk) for a in scenarios_for(sk) if a != sc and a not in used]
        return [(sc, b) for b in skills_for(sc) if b != sk]

    n = len(pairs)
    for i in range(n):  # every single-pair edit
        for p in options(i, pairs):
            yield pairs[:i] + [p] + pairs[i + 1:]
    if effort is Effort.LOW or n < 2:
        return
    for _ in range(_SAMPLES):
        if effort is Effort.HIGH:
            m = rng.randint(2, min(3, n))
            start = rng.randint(0, n - m)
            idx = list(range(start, start + m))
        else:
            idx = sorted(rng.sample(range(n), rng.randint(2, n)))
        new = list(pairs)
        for i in idx:
            opts = options(i, new)
            if not opts:
                break
            new[i] = rng.choice(opts)
        else:
            yield new


def _proposals(chain: Chain, direction: Direction, effort: Effort, rng: random.Random,
               prior: CatalogPrior) -> list[tuple[Pairs, float]]:
    """Edits that pass the cheap tests: a valid pipeline and a D_T gain."""
    pairs = chain.pairs()
    base = _cost(prior, chain.goal, pairs)
    gen = _length(rng, pairs, effort) if direction is Direction.LENGTH else _swap(rng, pairs, effort, direction)
    seen: set[tuple[tuple[str, str], ...]] = set()
    out = []
    for new in gen:
        key = tuple(new)
        if key in seen:
            continue
        seen.add(key)
        gain = _cost(prior, chain.goal, new) - base
        if gain > 1e-9 and not pairs_problems(new):
            out.append((new, gain))
    return out


def _valid(chain: Chain, new: Pairs, direction: Direction, effort: Effort) -> bool:
    """The loop's own checks on the edit (ξ_E -> ξ′)."""
    before, after = _trace(chain.goal, chain.pairs()), _trace(chain.goal, new)
    return not check_direction(before, after, direction) and not check_effort(before, after, effort)


def _size(old: Pairs, new: Pairs) -> int:
    """How many pairs an edit inserts or replaces."""
    if len(new) != len(old):
        return len(new) - len(old)
    return sum(a != b for a, b in zip(old, new, strict=True))


def candidates(chain: Chain, direction: Direction | str, effort: Effort | str, rng: random.Random,
               prior: CatalogPrior | None = None) -> list[tuple[Pairs, float]]:
    """Every valid edit found for this direction and effort, each with its D_T gain (> 0)."""
    direction, effort = Direction(direction), Effort(effort)
    pool = _proposals(chain, direction, effort, rng, prior or CatalogPrior())
    return [(new, gain) for new, gain in pool if _valid(chain, new, direction, effort)]


# Seed draws tried for an edit's new steps, looking for one whose data lets every later step keep its fixtures.
_RESIDUAL_DRAWS = 4


def apply_pairs(chain: Chain, new: Pairs, rng: random.Random) -> Chain:
    """The chain with these pairs, changed only where it must be (the residual edit).

    A pair already in the chain keeps its seed. A step in a scenario the chain already had (a skill swap, or a
    step whose input changed upstream) keeps that scenario's fixtures when its unchanged draw does not: it is
    pinned to them and asks its question of them anew, unless nothing meaningful can be asked of them, in which
    case it draws its own. New pairs get fresh seeds; a few draws are tried and the first that regenerates no
    kept scenario's fixtures wins (else the one regenerating fewest). RuntimeError when no draw generates.
    """
    best: tuple[int, int, Chain] | None = None
    for _ in range(_RESIDUAL_DRAWS):
        try:
            regenerated, harmless, out = _residual_draw(chain, new, rng)
        except RuntimeError:
            continue
        if best is None or (regenerated, harmless) < best[:2]:
            best = (regenerated, harmless, out)
        if regenerated == 0 and harmless == 0:
            break
    if best is None:
        raise RuntimeError(f"no draw of {new} generates")
    return best[2]


def _residual_draw(chain: Chain, new: Pairs, rng: random.Random) -> tuple[int, int, Chain]:
    """(how many kept scenarios had to draw new fixtures, how many steps' wrong variants would give the right output
    (`harmless_steps`), the chain) for one seed draw of the new steps."""
    old = {s.scenario: (i, s) for i, s in enumerate(chain.steps)}
    steps = []
    for sc, sk in new:
        kept = old.get(sc)
        if kept is not None and kept[1].skill == sk:
            steps.append(kept[1])
        else:
            steps.append(ChainStep(scenario=sc, skill=sk, seed=derive_seed(chain.seed, "step", sc, sk, rng.randrange(1 << 30))))
    out = chain.with_steps(steps)
    if out == chain:
        return 0, 0, chain
    old_blocks = build_blocks(chain)
    prev, regenerated, blocks = None, 0, []
    for t, step in enumerate(out.steps):
        kept = old.get(step.scenario)
        block = _try_step(out, t, prev)
        if kept is not None and (block is None or block.fixtures != old_blocks[kept[0]].fixtures):
            i = kept[0]
            pinned = out.with_steps((*out.steps[:t], step.model_copy(update={"pin": pin_of(chain, i, old_blocks[i - 1] if i else None)}),
                                     *out.steps[t + 1:]))
            on_kept = _try_step(pinned, t, prev)
            if on_kept is not None:
                out, block = pinned, on_kept
            else:
                regenerated += 1
        if block is None:
            raise RuntimeError(f"step {t + 1} ({step.skill} on {step.scenario}) cannot be generated")
        prev = block
        blocks.append(block)
    return regenerated, len(harmless_steps(blocks)), out


def _try_step(chain: Chain, t: int, prev: Block | None) -> Block | None:
    try:
        return build_step(chain, t, prev)
    except RuntimeError:
        return None


# Smaller edits are preferred (an edit's size is how many pairs it inserts or replaces); within a size,
# candidates are weighted by the square of their D_T gain.
_SIZE_WEIGHT = {1: 1.0, 2: 0.6, 3: 0.3}


def mutate(chain: Chain, direction: Direction | str, effort: Effort | str, rng: random.Random,
           prior: CatalogPrior | None = None, target: WeaknessTarget | None = None) -> Chain | None:
    """One exact edit of the chain that raises D_T, or None when this direction has none.

    The full checks (direction, effort, and that every block generates) run on the drawn candidate only;
    a failing draw is discarded and another one drawn, so the result stays a sample from the valid pool.
    With a `target`, the edits that raise the target agent's Σδ_θ are drawn first, weighted by their d_θ gain
    (D_T gain + Δδ); the others only when none of those is admissible.
    """
    direction, effort = Direction(direction), Effort(effort)
    old = chain.pairs()
    pool = _proposals(chain, direction, effort, rng, prior or CatalogPrior())
    tiers = [pool]
    if target is not None:
        base = target.total(old)
        raised = [(new, gain + target.total(new) - base) for new, gain in pool if target.total(new) - base > 1e-9]
        tiers = [raised, [(new, gain) for new, gain in pool if target.total(new) - base <= 1e-9]]
    for tier in tiers:
        edited = _draw(chain, tier, direction, effort, rng)
        if edited is not None:
            return edited
    return None


def _draw(chain: Chain, pool: list[tuple[Pairs, float]], direction: Direction, effort: Effort,
          rng: random.Random) -> Chain | None:
    """Draw from `pool` (edit, weight gain): the size first, then gain² within it, until one is admissible."""
    old = chain.pairs()
    # An edit that adds a step whose mistake gives the right output (`harmless_steps`) is drawn only when no other is
    # admissible: its tests could not tell that mistake from the skill, so the longer chain would not be harder.
    harmless = len(harmless_steps(build_blocks(chain)))
    fallback: Chain | None = None
    by_size: dict[int, list[tuple[Pairs, float]]] = {}
    for new, gain in pool:
        by_size.setdefault(_size(old, new), []).append((new, gain))
    while by_size:
        sizes = sorted(by_size)
        size = rng.choices(sizes, weights=[_SIZE_WEIGHT.get(n, 0.15) for n in sizes])[0]
        group = by_size[size]
        k = rng.choices(range(len(group)), weights=[g * g for _, g in group])[0]
        new_pairs, _ = group.pop(k)
        if not group:
            del by_size[size]
        if not _valid(chain, new_pairs, direction, effort):
            continue
        try:
            edited = apply_pairs(chain, new_pairs, rng)
        except RuntimeError:
            continue  # this combination cannot be generated meaningfully; draw another
        if len(harmless_steps(build_blocks(edited))) <= harmless:
            return edited
        fallback = fallback or edited
    return fallback
