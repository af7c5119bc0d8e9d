"""ξ (scenario–skill trajectories), reference distributions p_T, D_T, and checks on edits of ξ."""

from envevo.trace._difficulty import Difficulty, ReferenceDistribution, difficulty
from envevo.trace._estimators import ESTIMATORS, estimator, trace_of_task
from envevo.trace._edits import Direction, Effort, check_direction, check_effort, edit_spans
from envevo.trace._model import Step, Trace

__all__ = [
    "Difficulty",
    "ESTIMATORS",
    "Direction",
    "Effort",
    "ReferenceDistribution",
    "Step",
    "Trace",
    "check_direction",
    "check_effort",
    "difficulty",
    "edit_spans",
    "estimator",
    "trace_of_task",
]
