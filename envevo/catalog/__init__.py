"""The catalog: the procedural engine's shared domain data.

Scenarios (where the agent works) and skills (what it applies) form a compatibility graph. A chain of typed
(scenario, skill) blocks is a dependency pipeline: each step reads the previous step's output and looks its names
up in its own scenario, and the last step writes the checked artifact. A chain is ξ made concrete, so D_T is exact
under the catalog prior. Blocks carry typed fixture operations that `_fixture_runner.py` performs in the image build.

This package sits above envevo.trace: ξ and D_T (Step, Trace, Difficulty, difficulty) are trace's, and the catalog
imports them from there (they are not re-exported here: one import path per name). Trace reaches the catalog prior
and a procedural task's ξ (`chain_trace`) by name, through its lazy registries.
"""

from envevo.catalog._blocks import (
    CHAIN_ENGINE,
    block_snippets,
    build_blocks,
    build_step,
    chain_from_task,
    chain_trace,
    pin_of,
)
from envevo.catalog._chain import (
    Chain,
    ChainProblem,
    ChainProblemKind,
    ChainStep,
    Pin,
    chain_problems,
    derive_seed,
    fits_at,
    in_kinds,
    pairs_problems,
)
from envevo.catalog._fixtures import Op, fixture_script
from envevo.catalog._goals import GOAL_CATEGORIES, category_of, goal_text
from envevo.catalog._graph import SCENARIOS, SKILLS, TOOLS, compatible, graph, scenarios_for, skills_for
from envevo.catalog._kinds import KEYED, OUTPUT_DIR, WORK_DIR, Kind
from envevo.catalog._prior import UNKNOWN_P, CatalogPrior
from envevo.catalog._random import goal_categories, random_chain
from envevo.catalog._solve import harmless_steps, solve_script
from envevo.catalog.scenarios import CAPABILITIES, Scenario
from envevo.catalog.skills import Block, Skill

__all__ = [
    "CAPABILITIES",
    "CHAIN_ENGINE",
    "GOAL_CATEGORIES",
    "KEYED",
    "OUTPUT_DIR",
    "SCENARIOS",
    "SKILLS",
    "TOOLS",
    "UNKNOWN_P",
    "WORK_DIR",
    "Block",
    "CatalogPrior",
    "Chain",
    "ChainProblem",
    "ChainProblemKind",
    "ChainStep",
    "Kind",
    "Op",
    "Pin",
    "Scenario",
    "Skill",
    "block_snippets",
    "build_blocks",
    "build_step",
    "category_of",
    "chain_from_task",
    "chain_problems",
    "chain_trace",
    "compatible",
    "derive_seed",
    "fits_at",
    "fixture_script",
    "goal_categories",
    "goal_text",
    "graph",
    "harmless_steps",
    "in_kinds",
    "pairs_problems",
    "pin_of",
    "random_chain",
    "scenarios_for",
    "skills_for",
    "solve_script",
]
