"""The mutation record of a procedural edit: per step, what the edit changed and why.

A step owns its fixtures file, its instruction section, its oracle lines and its checks. An edit changes the
steps it names; data flowing out of them reaches later steps, which are then recomputed on the fixtures they
keep, or regenerated when nothing meaningful can be asked of those. Everything else stays byte for byte.
"""

from __future__ import annotations

from typing import Any

from envevo.catalog import Block, Chain, build_blocks

# What a step of the new chain is, relative to the step of the same scenario in the old chain.
KEPT = "kept"  # the same block: fixtures, section, oracle lines and checks unchanged
RECOMPUTED = "recomputed"  # same fixtures and skill; its answer follows a change upstream
EDITED = "edited"  # the edit replaced its skill; the fixtures are kept
REGENERATED = "regenerated"  # the scenario stays, but it needs fixtures of its own
NEW = "new"  # a pair the edit inserted or swapped in
REMOVED = "removed"  # a step of the old chain that the edit replaced


def _owned(b: Block) -> tuple[object, ...]:
    return b.fixtures, b.instruction, b.oracle_sh, b.checks


def _flow(old: list[Block], i: int, new: list[Block], t: int) -> list[str]:
    """Why step t (old step i) changed although its own pair did not: what reached it from upstream."""
    o, n = old[i], new[t]
    why = []
    if (old[i - 1].out_keys if i else None) != (new[t - 1].out_keys if t else None) or o.in_path != n.in_path:
        why.append(f"its input changed: the output of step {t}" if t else "it now starts the chain")
    if o.index != n.index:
        why.append(f"renumbered from step {i + 1}")
    if o.out_path != n.out_path:
        why.append(f"writes {n.out_path} instead of {o.out_path}")
    return why or ["its draw changed"]


def residual(before: Chain, after: Chain) -> list[dict[str, Any]]:
    """One row per step of `after` (step, scenario, skill, status, why), then the removed steps of `before`."""
    old, new = build_blocks(before), build_blocks(after)
    at = {s.scenario: i for i, s in enumerate(before.steps)}
    rows: list[dict[str, Any]] = []
    for t, (step, b) in enumerate(zip(after.steps, new, strict=True)):
        i = at.get(step.scenario)
        if i is None:
            status, why = NEW, "the edit put this pair here; its fixtures are its own"
        elif _owned(old[i]) == _owned(b):
            status, why = KEPT, "unchanged" if i == t else f"unchanged (was step {i + 1})"
        elif old[i].fixtures != b.fixtures:
            status = REGENERATED
            why = ("the new skill can ask nothing meaningful of the old fixtures" if before.steps[i].skill != step.skill
                   else "; ".join(_flow(old, i, new, t)) + ", beyond what its fixtures hold")
        elif before.steps[i].skill != step.skill:
            status, why = EDITED, "the skill was replaced; the scenario's fixtures are kept"
        else:
            status, why = RECOMPUTED, "; ".join(_flow(old, i, new, t)) + "; fixtures kept"
        rows.append({"step": t + 1, "scenario": step.scenario, "skill": step.skill, "status": status, "why": why})
    kept = {s.scenario for s in after.steps}
    rows += [{"step": None, "was_step": i + 1, "scenario": s.scenario, "skill": s.skill, "status": REMOVED,
              "why": "replaced by the edit"} for i, s in enumerate(before.steps) if s.scenario not in kept]
    return rows
