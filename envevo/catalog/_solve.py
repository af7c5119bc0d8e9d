"""A chain's reference solution (solve.sh), and its near misses: a step done with its wrong variant, or skipped.

The mutation verifier (envevo.verify) runs the near misses; the procedural engine writes the reference. Both read
this one function, so a mutant differs from the task's solve.sh in exactly the step it names.
"""

from __future__ import annotations

from collections.abc import Collection

from envevo.catalog._blocks import build_blocks
from envevo.catalog._chain import Chain
from envevo.catalog._graph import SCENARIOS, SKILLS
from envevo.catalog.skills import Block


def solve_script(chain: Chain, wrong: Collection[int] = frozenset(), blocks: list[Block] | None = None,
                 skip: Collection[int] = frozenset()) -> str:
    """solve.sh: every step's oracle snippet in order, or its wrong variant for the steps in `wrong` (0-based);
    the steps in `skip` are left out (their header stays, so the script says which step is missing)."""
    blocks = blocks or build_blocks(chain)
    out = ["#!/bin/bash", "# Reference solution, generated: one block per step, each reading the previous step's output.",
           "set -u", "export LC_ALL=C", "cd /app", "mkdir -p /app/work /app/output"]
    for b in blocks:
        head = f"# Step {b.index + 1}: {SKILLS[b.skill].title} in {SCENARIOS[b.scenario].title}"
        if b.index in skip:
            out += ["", head, "# (skipped)"]
            continue
        sh = b.wrong_sh if b.index in wrong else b.oracle_sh
        out += ["", head, "(", sh, ")"]
    return "\n".join(out) + "\n"


def harmless_steps(blocks: list[Block]) -> list[Block]:
    """The blocks whose wrong variant is not shown to change the checked output on their drawn fixtures.

    Each skill decides `wrong_differs` from the data it drew, by its model of the mistake (a trap row the loose
    pattern also matches, a certificate expiring exactly at the cutoff, a member name the loose wildcard also
    matches, two unchanged entries an unsorted diff must report, …). A harmless step's checks cannot tell the
    plausible mistake from the skill: RL would reward the mistake, and a longer chain would not be harder. Nothing
    here runs task code; the mutation verifier runs the mistakes themselves in the sandbox."""
    return [b for b in blocks if not b.wrong_differs and b.wrong_sh.strip() != b.oracle_sh.strip()]
