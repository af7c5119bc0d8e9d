"""The procedural engine: composes chains of the catalog (envevo.catalog) into real Harbor tasks and evolves them.

It keeps only composition (a chain -> Dockerfile, fixture script, instruction, solve.sh, tests, task.toml) and the
operators (the three evolution directions as exact edits of a chain), plus the engine that runs them offline.
The catalog's names are re-exported here for the callers that reach them through the engine.
"""

from envevo.catalog import (
    GOAL_CATEGORIES,
    SCENARIOS,
    SKILLS,
    TOOLS,
    Block,
    CatalogPrior,
    Chain,
    ChainStep,
    Kind,
    block_snippets,
    build_blocks,
    chain_from_task,
    chain_problems,
    compatible,
    derive_seed,
    goal_categories,
    graph,
    random_chain,
    scenarios_for,
    skills_for,
)
from envevo.evolve.engines.procedural._compose import compose, solve_script, write_task
from envevo.evolve.engines.procedural._engine import ProceduralEngine
from envevo.evolve.engines.procedural._operators import candidates, mutate
from envevo.evolve.engines.procedural._quality import quality_check
from envevo.evolve.engines.procedural._target import WeaknessTarget

__all__ = [
    "GOAL_CATEGORIES",
    "SCENARIOS",
    "SKILLS",
    "TOOLS",
    "Block",
    "CatalogPrior",
    "Chain",
    "ChainStep",
    "Kind",
    "ProceduralEngine",
    "WeaknessTarget",
    "block_snippets",
    "build_blocks",
    "candidates",
    "chain_from_task",
    "chain_problems",
    "compatible",
    "compose",
    "derive_seed",
    "goal_categories",
    "graph",
    "mutate",
    "quality_check",
    "random_chain",
    "scenarios_for",
    "skills_for",
    "solve_script",
    "write_task",
]
