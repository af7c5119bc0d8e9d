"""Weakness targeting's input: an agent's δ_θ per skill and scenario, read from a run's rollouts, as the
WeaknessTarget that a targetable engine (Capability.WEAKNESS_TARGET) steers by.

`envevo evolve --target-weakness RUN --by-agent A` calls `weakness_target`; the numbers are those of `envevo difficulty
RUN --weakness` (the same estimate, under the run's own p_T unless one is given).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from envevo.errors import UserError
from envevo.rollout._weakness import weakness
from envevo.trace import ReferenceDistribution

if TYPE_CHECKING:
    from envevo.evolve.engines.procedural import WeaknessTarget


def run_reference(run: Path) -> ReferenceDistribution:
    """The p_T `run` recorded its D_T under; catalog when it recorded none yet (only its seed, or rollouts only)."""
    from envevo.evolve import recorded_run_estimators, run_estimator
    from envevo.trace import estimator

    return run_estimator(run) if recorded_run_estimators(run) else estimator("catalog")


def weakness_target(run: Path, agent: str | None, p: ReferenceDistribution | None = None) -> WeaknessTarget:
    """`agent`'s δ_θ per skill and scenario from `run`'s rollouts (p: the p_T of d_T; default the run's own)."""
    from envevo.evolve.engines.procedural import WeaknessTarget
    from envevo.store import LineageStore, RunPaths

    if not RunPaths(run_dir=run).db.is_file():
        raise UserError(f"--target-weakness {run}: not a run (no store.sqlite); pass a run dir (`envevo evolve "
                        "--run RUN`) rolled out with `envevo rollout RUN --agent A`")
    if p is None:
        p = run_reference(run)
    with LineageStore.open(run, create=False) as store:
        rep = weakness(store, agent=agent, p=p)
    return WeaknessTarget(agent=rep.agent, model=rep.model, source=str(run.resolve()),
                          skills={r.skill: r.delta for r in rep.skills if r.skill},
                          scenarios={r.scenario: r.delta for r in rep.scenarios if r.scenario})
