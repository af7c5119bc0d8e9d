"""The procedural engine: an offline scenario–skill catalog that composes, evolves and scores real Harbor tasks.

Scenarios (where the agent works) and skills (what it applies) form a compatibility graph. A chain of
typed (scenario, skill) blocks is a dependency pipeline: each step reads the previous step's output and
looks its names up in its own scenario, and the last step writes the checked artifact. Because ξ is the
chain itself, the three evolution directions are exact edits and D_T is exact under the catalog prior.
"""

from envevo.evolve.engines.procedural._catalog import (
    GOAL_CATEGORIES,
    SCENARIOS,
    SKILLS,
    TOOLS,
    compatible,
    graph,
    scenarios_for,
    skills_for,
)
from envevo.evolve.engines.procedural._chain import Chain, ChainStep, chain_problems, derive_seed
from envevo.evolve.engines.procedural._compose import (
    block_snippets,
    build_blocks,
    chain_from_task,
    compose,
    solve_script,
    write_task,
)
from envevo.evolve.engines.procedural._engine import ProceduralEngine
from envevo.evolve.engines.procedural._kinds import Kind
from envevo.evolve.engines.procedural._operators import candidates, mutate
from envevo.evolve.engines.procedural._prior import CatalogPrior
from envevo.evolve.engines.procedural._quality import quality_check
from envevo.evolve.engines.procedural._random import goal_categories, random_chain
from envevo.evolve.engines.procedural._skill import Block

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
