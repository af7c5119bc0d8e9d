"""Generating a chain's blocks, and reading a chain back from the task it was composed into."""

from __future__ import annotations

import random
from functools import lru_cache

from envevo.catalog._chain import Chain, Pin, chain_problems
from envevo.catalog._graph import SCENARIOS, SKILLS
from envevo.catalog._kinds import Kind, keys_file, out_path
from envevo.catalog.skills import Block, StepIO
from envevo.errors import TaskError
from envevo.task import Task
from envevo.trace import Trace

# `[metadata.envevo].engine` of a task composed from a chain.
CHAIN_ENGINE = "procedural"


def build_blocks(chain: Chain) -> list[Block]:
    """Generate every step in order; each step's data depends on what the previous step outputs."""
    problems = chain_problems(chain)
    if problems:
        raise TaskError(f"invalid procedural chain: {'; '.join(map(str, problems))}")
    return [b.model_copy(deep=True) for b in _build(chain.model_dump_json())]


@lru_cache(maxsize=64)
def _build(chain_json: str) -> tuple[Block, ...]:
    chain = Chain.model_validate_json(chain_json)
    blocks: list[Block] = []
    prev: Block | None = None
    for t in range(chain.L):
        prev = build_step(chain, t, prev)
        blocks.append(prev)
    return tuple(blocks)


def step_io(chain: Chain, t: int, prev: Block | None) -> StepIO:
    """What step t reads (the previous block's output) and where it writes."""
    out_kind = SKILLS[chain.steps[t].skill].out
    return StepIO(index=t, in_kind=prev.out_kind if prev else Kind.NONE, in_path=prev.out_path if prev else None,
                  in_keys=tuple(prev.out_keys) if prev else None, out_kind=out_kind,
                  out_path=out_path(t, out_kind, t == chain.L - 1), keys=keys_file(t))


def build_step(chain: Chain, t: int, prev: Block | None) -> Block:
    """Step t's block, given the block before it: drawn afresh, or asked anew of its pinned fixtures."""
    step = chain.steps[t]
    io = step_io(chain, t, prev)
    rng = _stream(chain.seed, step.seed, io, step.scenario, step.skill)
    if step.pin is None:
        return SKILLS[step.skill].build(SCENARIOS[step.scenario], io, rng)
    return SKILLS[step.skill].build_on(SCENARIOS[step.scenario], io, rng, _origin(chain.seed, step.scenario, step.pin))


def pin_of(chain: Chain, t: int, prev: Block | None) -> Pin:
    """The pin that keeps step t's fixtures: its own pin, or else a record of its own fresh draw."""
    step = chain.steps[t]
    if step.pin is not None:
        return step.pin
    io = step_io(chain, t, prev)
    return Pin(skill=step.skill, seed=step.seed, index=t, in_kind=io.in_kind, in_path=io.in_path, in_keys=io.in_keys,
               final=t == chain.L - 1)


def _stream(chain_seed: int, step_seed: int, io: StepIO, scenario: str, skill: str) -> random.Random:
    return random.Random(f"envevo-procedural|{chain_seed}|{step_seed}|{io.index}|{scenario}|{skill}|"
                         f"{io.in_kind.value}|{','.join(io.in_keys or ())}")


@lru_cache(maxsize=256)
def _origin(chain_seed: int, scenario: str, pin: Pin) -> Block:
    """The fresh draw a pin names, redone alone from the inputs it recorded."""
    out_kind = SKILLS[pin.skill].out
    io = StepIO(index=pin.index, in_kind=pin.in_kind, in_path=pin.in_path, in_keys=pin.in_keys, out_kind=out_kind,
                out_path=out_path(pin.index, out_kind, pin.final), keys=keys_file(pin.index))
    return SKILLS[pin.skill].build(SCENARIOS[scenario], io, _stream(chain_seed, pin.seed, io, scenario, pin.skill))


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


def chain_trace(task: Task) -> Trace:
    """ξ of a procedural task: the pairs of its chain (envevo.trace reaches this through its ξ-reader registry)."""
    return chain_from_task(task).trace()
