"""Procedural tasks in real containers: a few chains that together cover every scenario and every skill
pass the reference solution and fail the empty one, verified in one batch."""

import asyncio
import time

import pytest

from envevo.catalog import SCENARIOS, SKILLS, Chain, ChainStep, Kind, build_blocks, compatible, derive_seed
from envevo.evolve.engines.procedural import write_task
from envevo.verify import InvalidTestVerifier, OracleVerifier, verify_tasks

pytestmark = pytest.mark.sandbox


def cover_chains(length: int = 4, limit: int = 10) -> list[Chain]:
    """Greedy cover: each chain takes, step by step, the valid pair that covers the most unseen elements."""
    pairs = sorted((a, b) for a in SCENARIOS for b in SKILLS if compatible(a, b))
    todo_sc, todo_sk = set(SCENARIOS), set(SKILLS)
    chains: list[Chain] = []
    while (todo_sc or todo_sk) and len(chains) < limit:
        steps, used, prev = [], set(), Kind.NONE
        for t in range(length):
            opts = [(a, b) for a, b in pairs if a not in used and prev in SKILLS[b].accepts
                    and (t == length - 1 or SKILLS[b].out is not Kind.NUMBER)]
            a, b = max(opts, key=lambda p: ((p[0] in todo_sc) + (p[1] in todo_sk), p[0] in todo_sc))
            steps.append(ChainStep(scenario=a, skill=b, seed=derive_seed("cover", len(chains), t)))
            used.add(a)
            prev = SKILLS[b].out
        while steps and not ((steps[-1].scenario in todo_sc) or (steps[-1].skill in todo_sk)) and len(steps) > 3:
            steps.pop()  # a tail that covers nothing new only costs time
        chain = Chain(goal="CI triage: cover the catalog", category="ci-triage", seed=len(chains), steps=tuple(steps))
        build_blocks(chain)
        chains.append(chain)
        todo_sc -= {s.scenario for s in steps}
        todo_sk -= {s.skill for s in steps}
    return chains


def test_cover_chains_cover_the_whole_catalog():
    chains = cover_chains()
    assert len(chains) <= 10 and all(3 <= c.L <= 4 for c in chains)
    assert {s.scenario for c in chains for s in c.steps} == set(SCENARIOS)
    assert {s.skill for c in chains for s in c.steps} == set(SKILLS)


def test_cover_chains_pass_the_oracle_and_fail_the_empty_solution(sandbox, tmp_path):
    chains = cover_chains()
    tasks = [(f"cover{i}", write_task(c, tmp_path / "tasks" / f"cover{i}")) for i, c in enumerate(chains)]
    start = time.monotonic()
    verdicts = asyncio.run(verify_tasks(tasks, tmp_path / "trials", env=sandbox,
                                        verifiers=[OracleVerifier(repeats=1), InvalidTestVerifier()], concurrency=3))
    wall = time.monotonic() - start
    print(f"\n{len(chains)} chains, {len({s.scenario for c in chains for s in c.steps})} scenarios, "
          f"{len({s.skill for c in chains for s in c.steps})} skills, verified in {wall:.0f} s")
    bad = {v.task: v.reasons for v in verdicts if not v.ok}
    assert not bad, bad
