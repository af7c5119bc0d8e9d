"""p_T estimators behind one name-keyed interface, and ξ for a task (where it can be read without a model).

Every figure records `Difficulty.estimator`, so D_T computed under different estimators is never mixed up.
Only the catalog estimator exists so far; corpus and llm estimators plug in here under their own names.
"""

from __future__ import annotations

from collections.abc import Callable

from envevo.errors import UserError
from envevo.trace._difficulty import ReferenceDistribution
from envevo.trace._model import Trace


def _catalog() -> ReferenceDistribution:
    # Imported lazily: the procedural engine imports envevo.trace itself.
    from envevo.evolve.engines.procedural import CatalogPrior

    return CatalogPrior()


ESTIMATORS: dict[str, Callable[[], ReferenceDistribution]] = {"catalog": _catalog}


def estimator(name: str = "catalog") -> ReferenceDistribution:
    """The reference distribution p_T registered as `name`."""
    try:
        return ESTIMATORS[name]()
    except KeyError:
        raise UserError(f"unknown p_T estimator {name!r}; choose one of: {', '.join(sorted(ESTIMATORS))}") from None


def trace_of_task(task) -> Trace:
    """ξ of a task from its `[metadata.envevo]` (procedural tasks carry the exact chain)."""
    meta = task.envevo_metadata or {}
    if meta.get("engine") == "procedural" and isinstance(meta.get("chain"), dict):
        from envevo.evolve.engines.procedural import chain_from_task

        return chain_from_task(task).trace()
    if isinstance(meta.get("trace"), dict):
        return Trace.model_validate(meta["trace"])
    raise UserError(f"task {task.name} carries no ξ in [metadata.envevo]; extracting it needs `--engine llm`, "
                    "which is not available yet (procedural tasks from `envevo seed procedural` work)")
