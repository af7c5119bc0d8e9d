"""Generating a chain's blocks, and reading a chain back from the task it was composed into."""

from __future__ import annotations

import random
from functools import lru_cache

from envevo.catalog._chain import Chain, chain_problems
from envevo.catalog._graph import SCENARIOS, SKILLS
from envevo.catalog._kinds import Kind, keys_file, out_path
from envevo.catalog.skills import Block, StepIO
from envevo.errors import TaskError
from envevo.task import Task

# `[metadata.envevo].engine` of a task composed from a chain.
CHAIN_ENGINE = "procedural"


def build_blocks(chain: Chain) -> list[Block]:
    """Generate every step in order; each step's data depends on what the previous step outputs."""
    problems = chain_problems(chain)
    if problems:
        raise TaskError(f"invalid procedural chain: {'; '.join(problems)}")
    return [b.model_copy(deep=True) for b in _build(chain.model_dump_json())]


@lru_cache(maxsize=64)
def _build(chain_json: str) -> tuple[Block, ...]:
    chain = Chain.model_validate_json(chain_json)
    blocks: list[Block] = []
    prev: Block | None = None
    for t, step in enumerate(chain.steps):
        skill, sc = SKILLS[step.skill], SCENARIOS[step.scenario]
        in_kind = prev.out_kind if prev else Kind.NONE
        in_keys = tuple(prev.out_keys) if prev else None
        io = StepIO(index=t, in_kind=in_kind, in_path=prev.out_path if prev else None, in_keys=in_keys,
                    out_kind=skill.out, out_path=out_path(t, skill.out, t == chain.L - 1), keys=keys_file(t))
        rng = random.Random(f"envevo-procedural|{chain.seed}|{step.seed}|{t}|{step.scenario}|{step.skill}|"
                            f"{in_kind.value}|{','.join(in_keys or ())}")
        prev = skill.build(sc, io, rng)
        blocks.append(prev)
    return tuple(blocks)


def block_snippets(chain: Chain, t: int) -> tuple[str, str]:
    """(oracle, wrong) shell for step t (0-based); simulated agents swap one for the other."""
    b = build_blocks(chain)[t]
    return b.oracle_sh, b.wrong_sh


def chain_from_task(task: Task) -> Chain:
    """The chain a procedural task was composed from (from `[metadata.envevo]`)."""
    meta = task.envevo_metadata
    if meta.get("engine") != CHAIN_ENGINE or not isinstance(meta.get("chain"), dict):
        raise TaskError(f"task {task.name} was not made by the procedural engine (no chain in [metadata.envevo]); "
                        "seed one with `envevo seed procedural`")
    data = {k: v for k, v in meta["chain"].items() if k != "final"}
    return Chain.model_validate(data)
