"""ξ (scenario–skill trajectories), reference distributions p_T, D_T, and checks on edits of ξ.

trace sits below the catalog and needs only envevo.task: ξ and D_T are defined here, and every p_T estimator factory
(the catalog prior included) and the reader of a procedural task's chain are reached by name through lazy
registries (`ESTIMATORS`, `XI_READERS`).

The corpus estimator (`CorpusPrior`, `load_corpus`), the embedding helpers and the drift encoder (`measure_drift`)
load lazily: they pull numpy, which most users of ξ never need, and the store, which keeps `Drift`, must not load them.
"""

from typing import TYPE_CHECKING, Any

from envevo.trace._corpus_source import RunSource
from envevo.trace._difficulty import Difficulty, ReferenceDistribution, difficulty
from envevo.trace._drift import DEFAULT_MAX_DRIFT, Drift, drift_reason
from envevo.trace._edits import Direction, Effort, check_direction, check_effort, edit_spans
from envevo.trace._estimators import ESTIMATORS, estimator, estimator_name, estimator_of
from envevo.trace._model import Step, Trace
from envevo.trace._task_xi import XI_READERS, has_trace, trace_of_task

_LAZY = {"CorpusPrior": "envevo.trace._corpus", "load_corpus": "envevo.trace._corpus",
         "cache_dir": "envevo.trace._embed", "label_text": "envevo.trace._embed",
         "default_model_dir": "envevo.trace._embed", "model_digest": "envevo.trace._embed",
         "measure_drift": "envevo.trace._drift_encoder"}

if TYPE_CHECKING:  # the lazy names' types, for mypy
    from envevo.trace._drift_encoder import measure_drift


def __getattr__(name: str) -> Any:  # the lazily imported names, typed where they are defined
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CorpusPrior",
    "DEFAULT_MAX_DRIFT",
    "Difficulty",
    "Drift",
    "ESTIMATORS",
    "Direction",
    "Effort",
    "RunSource",
    "ReferenceDistribution",
    "Step",
    "Trace",
    "XI_READERS",
    "check_direction",
    "cache_dir",
    "check_effort",
    "default_model_dir",
    "difficulty",
    "drift_reason",
    "edit_spans",
    "estimator",
    "estimator_name",
    "estimator_of",
    "has_trace",
    "label_text",
    "load_corpus",
    "measure_drift",
    "model_digest",
    "trace_of_task",
]
