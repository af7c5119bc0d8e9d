"""Trainers: an envevo scheduler driving verl, SkyRL, prime-rl (verifiers), TRL and OpenEnv, one package each.

Each trainer package (``envevo.trainers.<name>``) imports its framework only in the module that subclasses it, so the
package and its runner constants load without it; install the frameworks with the ``rl`` extra (SkyRL: ``skyrl``,
OpenEnv: ``openenv``). A *runner* is what executes a rollout of an exported task; its :class:`RunnerSpec` says which of
the task's guarantees it honours (:class:`Capability`). ``envevo export --runner NAME`` and every adapter check tasks
against them (:func:`check_tasks`); :data:`RUNNERS` lists them all, and docs/trainers.md's "which runner honours what"
table is generated from it (``python -m envevo.trainers._table``).

Shared by every adapter: building a scheduler from a dataset's rows (:func:`build_scheduler`), feeding finished groups
back (:func:`observe_groups`), reading and checking an rl export (:func:`read_export_index`), the per-step training log
(:class:`StepLog`) and live trials in a worker process (``_live_client``, ``_live_worker``). docs/trainers.md has a
config snippet per trainer.
"""

from envevo.trainers._base import (
    BatchDraws,
    build_scheduler,
    check_export_rows,
    lineages_from_rows,
    observe_groups,
    read_export_index,
    row_positions,
)
from envevo.trainers._ports import check_port
from envevo.trainers._runner import (
    Capability,
    Honours,
    Level,
    Runner,
    RunnerSpec,
    check_tasks,
    task_configs,
    task_needs,
    unhonoured,
)
from envevo.trainers._runners import ENVEVO_RUNTIME, HARBOR, HARBOR_ENVEVO_ENV, RUNNERS, check_export, runner_spec
from envevo.trainers._steplog import TRAINING_LOG_DIR, StepLog

__all__ = [
    "ENVEVO_RUNTIME",
    "HARBOR",
    "HARBOR_ENVEVO_ENV",
    "RUNNERS",
    "TRAINING_LOG_DIR",
    "BatchDraws",
    "Capability",
    "Honours",
    "Level",
    "Runner",
    "RunnerSpec",
    "StepLog",
    "build_scheduler",
    "check_export",
    "check_export_rows",
    "check_port",
    "check_tasks",
    "lineages_from_rows",
    "observe_groups",
    "read_export_index",
    "row_positions",
    "runner_spec",
    "task_configs",
    "task_needs",
    "unhonoured",
]
