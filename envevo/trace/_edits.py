"""Which pairs of ξ an edit touched, and whether it respects a direction and an effort bound.

The evolution loop checks these in code for every plan, whatever engine proposed it: an LLM may be asked
for "one contiguous span", but only this check makes it so.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from enum import StrEnum

from envevo.trace._model import Step, Trace


class Direction(StrEnum):
    LENGTH = "length"  # insert a new (σ, κ) pair
    SCENARIO = "scenario"  # replace a scenario, keep its skill
    SKILL = "skill"  # replace a skill, keep its scenario


class Effort(StrEnum):
    LOW = "low"  # exactly one pair
    HIGH = "high"  # one contiguous span
    MAX = "max"  # unrestricted


def edit_spans(before: Trace, after: Trace) -> list[tuple[str, int, int, int, int]]:
    """Non-equal opcodes (tag, i1, i2, j1, j2) turning before.steps into after.steps."""
    sm = SequenceMatcher(a=list(before.steps), b=list(after.steps), autojunk=False)
    return [op for op in sm.get_opcodes() if op[0] != "equal"]


def _aligned_pairs(before: Trace, after: Trace) -> list[tuple[Step, Step]]:
    """Position-wise (old, new) pairs that differ, for same-length edits."""
    return [(a, b) for a, b in zip(before.steps, after.steps, strict=False) if a != b]


def check_direction(before: Trace, after: Trace, direction: Direction) -> list[str]:
    """Reasons the edit does not realize the direction; empty when it does."""
    if direction is Direction.LENGTH:
        if after.L <= before.L:
            return [f"length must insert at least one pair (L {before.L} -> {after.L})"]
        # Insertions only: every original pair survives, in order.
        sm = SequenceMatcher(a=list(before.steps), b=list(after.steps), autojunk=False)
        if sum(block.size for block in sm.get_matching_blocks()) != before.L:
            return ["length may only insert pairs; it changed or removed existing ones"]
        return []
    if after.L != before.L:
        return [f"{direction.value} must keep the number of pairs (L {before.L} -> {after.L})"]
    changed = _aligned_pairs(before, after)
    if not changed:
        return [f"{direction.value} changed nothing"]
    reasons = []
    for old, new in changed:
        if direction is Direction.SCENARIO and (old.skill != new.skill or old.scenario == new.scenario):
            reasons.append(f"scenario must replace the scenario and keep the skill: {old} -> {new}")
        if direction is Direction.SKILL and (old.scenario != new.scenario or old.skill == new.skill):
            reasons.append(f"skill must replace the skill and keep the scenario: {old} -> {new}")
    return reasons


def check_effort(before: Trace, after: Trace, effort: Effort) -> list[str]:
    """Reasons the edit exceeds the effort bound; empty when it respects it."""
    spans = edit_spans(before, after)
    if not spans:
        return ["the plan does not change ξ"]
    if effort is Effort.MAX:
        return []
    if len(spans) > 1:
        return [f"{effort.value} effort allows one contiguous span; the plan edits {len(spans)} separate spans"]
    if effort is Effort.LOW:
        tag, i1, i2, j1, j2 = spans[0]
        if max(i2 - i1, j2 - j1) != 1:
            return [f"low effort allows exactly one pair; the plan edits {max(i2 - i1, j2 - j1)}"]
    return []
