"""ξ (scenario–skill trajectories), reference distributions p_T, D_T, and checks on edits of ξ.

The corpus and llm estimators (`CorpusPrior`, `load_corpus`, `LLMPrior`) load lazily: they pull numpy, tokenizers
and httpx, which most users of ξ never need.
"""

from envevo.trace._difficulty import Difficulty, ReferenceDistribution, difficulty
from envevo.trace._estimators import ESTIMATORS, estimator, trace_of_task
from envevo.trace._edits import Direction, Effort, check_direction, check_effort, edit_spans
from envevo.trace._model import Step, Trace

_LAZY = {"CorpusPrior": "envevo.trace._corpus", "load_corpus": "envevo.trace._corpus",
         "LLMPrior": "envevo.trace._llm_prior"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CorpusPrior",
    "Difficulty",
    "ESTIMATORS",
    "Direction",
    "Effort",
    "LLMPrior",
    "ReferenceDistribution",
    "Step",
    "Trace",
    "check_direction",
    "check_effort",
    "difficulty",
    "edit_spans",
    "estimator",
    "load_corpus",
    "trace_of_task",
]
