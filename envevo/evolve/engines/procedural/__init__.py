"""The procedural engine: composes chains of the catalog (envevo.catalog) into real Harbor tasks and evolves them.

It keeps only composition (a chain -> Dockerfile, fixture script, instruction, solve.sh, tests, task.toml) and the
operators (the three evolution directions as exact edits of a chain), plus the engine that runs them offline.
The catalog's names (chains, scenarios, skills, the catalog prior) have one import path, `envevo.catalog`; they are
not re-exported here.
"""

from envevo.evolve.engines.procedural._engine import ProceduralEngine
from envevo.evolve.engines.procedural._operators import candidates, mutate
from envevo.evolve.engines.procedural._quality import quality_check
from envevo.evolve.engines.procedural._target import WeaknessTarget
from envevo.evolve.engines.procedural._task_from_chain import compose, write_task

__all__ = [
    "ProceduralEngine",
    "WeaknessTarget",
    "candidates",
    "compose",
    "mutate",
    "quality_check",
    "write_task",
]
