"""Curriculum scheduling of evolved lineages for RL training, trainer-agnostic, plus a GRPO curriculum simulator.

Every scheduler takes *lineages* (see :mod:`envevo.schedule._records`: lists of :class:`EnvRecord`, one list
per lineage, one record per version) and offers one interface: ``next(n)`` → environment ids to roll out
(one group each), ``observe(env_id, rewards)`` → :class:`Observation`, ``state_dict()`` /
``load_state_dict()``. Build one by name with :func:`make_scheduler` (``"el"``, ``"el+patience+frontier"``,
``"random"``, ``"plr"``, ``"sfl"``, ``"dapo"``, ``"pools"``, ``"coevo"``).

The curriculum simulator (:func:`simulate`, a synthetic GRPO learner on a lineage pool) compares them; its
numbers are a simulation, never a measurement. :func:`write_report` (plots, HTML) loads matplotlib lazily.
Schedulers are registered by name in ``_registry.py``; their classes are imported when first used.
"""

import importlib
from typing import Any

from envevo.schedule._base import Observation, Scheduler, make_scheduler, parse_spec
from envevo.schedule._export import RL_INDEX, export_rl
from envevo.schedule._learner import LearnerConfig, SyntheticLearner
from envevo.schedule._load import load_lineages, synthetic_lineages
from envevo.schedule._records import EnvRecord, EnvTable, Lineages, ScheduleError, normalize_lineages
from envevo.schedule._registry import (
    SCHEDULERS,
    register_scheduler,
    scheduler_class,
    scheduler_names,
    scheduler_summary,
)
from envevo.schedule._simulate import (
    DEFAULT_SCHEDULERS,
    METRICS,
    SIMULATION_LABEL,
    RunResult,
    SimConfig,
    SimulationResult,
    simulate,
)

__all__ = [
    "DEFAULT_SCHEDULERS",
    "METRICS",
    "RL_INDEX",
    "SCHEDULERS",
    "SIMULATION_LABEL",
    "BetaAdvance",
    "CoevoScheduler",
    "DAPOScheduler",
    "ELScheduler",
    "EnvRecord",
    "EnvTable",
    "LearnerConfig",
    "Lineages",
    "Observation",
    "PLRScheduler",
    "PoolsScheduler",
    "RandomScheduler",
    "RunResult",
    "SFLScheduler",
    "ScheduleError",
    "Scheduler",
    "SimConfig",
    "SimulationResult",
    "SyntheticLearner",
    "export_rl",
    "load_lineages",
    "make_scheduler",
    "normalize_lineages",
    "parse_spec",
    "register_scheduler",
    "scheduler_class",
    "scheduler_names",
    "scheduler_summary",
    "simulate",
    "synthetic_lineages",
    "write_report",
]

_REPORT_NAMES = ("write_report", "PAIRED_METRICS", "SHORT_TITLES", "TABLE_METRICS", "fmt_pm", "metric_title")
# The scheduler classes load with their module, as make_scheduler loads them: only the ones asked for.
_CLASS_MODULES = {
    "ELScheduler": "_el", "BetaAdvance": "_el", "RandomScheduler": "_uniform", "DAPOScheduler": "_uniform",
    "PLRScheduler": "_plr", "SFLScheduler": "_sfl", "PoolsScheduler": "_pools", "CoevoScheduler": "_coevo",
}


def __getattr__(name: str) -> Any:
    if name in _REPORT_NAMES:  # matplotlib only when plots or report tables are wanted
        from envevo.schedule import _report

        return getattr(_report, name)
    if name in _CLASS_MODULES:
        return getattr(importlib.import_module(f"envevo.schedule.{_CLASS_MODULES[name]}"), name)
    raise AttributeError(f"module 'envevo.schedule' has no attribute {name!r}")
