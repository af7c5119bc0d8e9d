"""TRL: GRPO on an envevo curriculum.

:class:`EnvevoGRPOTrainer` is TRL's ``GRPOTrainer`` with two changes:

- its train sampler is :class:`SchedulerRepeatSampler`: the layout of TRL's ``RepeatSampler`` (each
  prompt ``num_generations`` times in a row, a chunk of ``generation_batch_size // num_generations``
  prompts repeated ``num_iterations * steps_per_generation`` times), but each chunk's prompts are the
  rows of the environments the scheduler serves next (``scheduler.next(chunk)``) instead of a shuffle;
- after rewards are computed (and gathered across processes, as TRL does), the environment ids of the
  whole generation batch are gathered too and every process feeds the same groups back in the same
  order (:func:`~envevo.trainers._base.observe_groups`): every rank's scheduler stays
  identical, so every rank's sampler keeps drawing the same environments, which TRL's grouping needs.

The train dataset holds one row per environment with a column ``env_id`` (its export name) plus
``lineage`` and ``generation``, as ``envevo export RUN --format rl`` writes. The scheduler's
``group_size`` is ``num_generations``. A rollout passes at reward ``>= pass_threshold`` of the scheduler
(1.0 by default) on the weighted sum of the reward functions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelerate.utils import gather_object
from torch.utils.data import Sampler
from trl import GRPOTrainer

if TYPE_CHECKING:
    import torch
    from datasets import Dataset
    from trl.experimental.harbor import HarborSpec

from envevo.schedule import Observation, ScheduleError, Scheduler
from envevo.trainers._base import (
    ENV_ID,
    GENERATION,
    LINEAGE,
    build_scheduler,
    observe_groups,
    read_export_index,
    row_positions,
)
from envevo.trainers._runner import RunnerSpec, refusal, task_configs, unhonoured
from envevo.trainers._steplog import StepLog
from envevo.trainers.trl import HARBOR_ENV


def harbor_train_dataset(spec: HarborSpec, export_dir: str | os.PathLike[str]) -> Dataset:
    """TRL's ``HarborSpec(OUT).train_dataset`` of an rl export, with the columns the scheduler reads (``env_id``,
    ``lineage``, ``generation``, ``D_T``) joined from ``OUT/index.parquet`` by task directory name."""
    by_name = {str(r[ENV_ID]): r for r in read_export_index(export_dir)}
    ds = spec.train_dataset
    names = [Path(d).name for d in ds["task_dir"]]
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ScheduleError(f"HarborSpec task(s) {missing[:3]} are not in {export_dir}'s index; "
                            "give HarborSpec the export folder itself")
    for col in (ENV_ID, LINEAGE, GENERATION, "D_T"):
        ds = ds.add_column(col, [by_name[n][col] for n in names])
    return ds


def _runners_of(factories: Mapping[object, object] | None) -> list[RunnerSpec]:
    """The runner of each environment factory: its class's ``runner`` (an envevo adapter, :class:`Runner`), or
    TRL's own ``HarborEnv``; a factory of neither kind is the user's own and is not checked."""
    try:
        from trl.experimental.harbor import HarborEnv
    except ImportError:  # a TRL without Harbor support has no HarborEnv to refuse
        HarborEnv = None  # noqa: N806
    out = []
    for factory in (factories or {}).values():
        cls = getattr(factory, "func", factory)
        if not isinstance(cls, type):
            continue
        spec = getattr(cls, "runner", None)
        if isinstance(spec, RunnerSpec):
            out.append(spec)
        elif HarborEnv is not None and issubclass(cls, HarborEnv):
            out.append(HARBOR_ENV)
    return out


def _check_runner(factories: Mapping[object, object] | None, dataset: Dataset, allowed: bool) -> None:
    """Refuse a runner for tasks whose reward depends on what it does not honour (its capability constants): TRL's own
    ``HarborEnv`` runs the tests in the agent's container, so a hack the task's verifier defeats (a ``python3`` shim)
    scores 1.0 there. ``allow_trl_harbor_env=True`` turns this into a warning."""
    runners = _runners_of(factories)
    if not runners:
        return
    columns = getattr(dataset, "column_names", None) or []
    tasks = task_configs(dataset["task_dir"] if "task_dir" in columns else [])
    for runner in runners:
        lost = unhonoured(runner, tasks)
        if not lost:
            continue
        if not allowed:
            raise ScheduleError(refusal(runner, lost) + ", or pass allow_trl_harbor_env=True to train on them anyway")
        import warnings

        warnings.warn(refusal(runner, lost), stacklevel=3)


class SchedulerRepeatSampler(Sampler[int]):
    """TRL ``RepeatSampler`` layout, with prompts chosen by an envevo scheduler."""

    def __init__(
        self,
        env_ids: Sequence[str],
        scheduler: Scheduler,
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
    ) -> None:
        if mini_repeat_count < 1 or batch_size < 1 or repeat_count < 1:
            raise ScheduleError("mini_repeat_count, batch_size and repeat_count must be >= 1")
        self.scheduler = scheduler
        self.positions = row_positions(env_ids, scheduler)
        self.num_samples = len(env_ids)
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count

    def __iter__(self) -> Iterator[int]:
        for _ in range(self.num_samples // self.batch_size):
            chunk = [self.positions[e] for e in self.scheduler.next(self.batch_size)]
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index

    def __len__(self) -> int:
        return (self.num_samples // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count


class EnvevoGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose training prompts follow an envevo scheduler and whose rewards feed it back.

    Pass ``scheduler=`` (an instance, or a spec such as ``"el"`` built over the train dataset's rows with
    ``scheduler_seed`` and ``scheduler_options``); ``step_log=PATH`` appends one JSON line per generation batch
    (envevo/trainers/_steplog.py); everything else is ``GRPOTrainer``'s."""

    def __init__(
        self,
        *args: object,
        scheduler: Scheduler | str = "el",
        scheduler_seed: int = 0,
        scheduler_options: dict[str, Any] | None = None,
        env_column: str = ENV_ID,
        allow_trl_harbor_env: bool = False,
        step_log: str | os.PathLike[str] | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(*args, **kwargs)
        ds = self.train_dataset
        _check_runner(getattr(self, "environment_factories", None), ds, allow_trl_harbor_env)
        if ds is None or env_column not in getattr(ds, "column_names", []):
            raise ScheduleError(f"EnvevoGRPOTrainer needs a train dataset with an {env_column!r} column "
                                "(see `envevo export RUN --format rl`)")
        self.env_column = env_column
        self.scheduler = build_scheduler(
            scheduler, rows=ds.to_list() if isinstance(scheduler, str) else None, seed=scheduler_seed,
            group_size=self.num_generations, **(scheduler_options or {}),
        )
        if self.scheduler.group_size != self.num_generations:
            raise ScheduleError(f"the scheduler's group_size ({self.scheduler.group_size}) must equal "
                                f"num_generations ({self.num_generations})")
        self.curriculum_observations: list[Observation] = []
        # RUN/training/NAME.jsonl: `envevo report RUN` shows it (the main process writes it)
        self.step_log = StepLog(step_log, ds.to_list()) if step_log is not None and self.accelerator.is_main_process else None

    def _get_train_sampler(self, dataset: Dataset | None = None) -> Sampler:
        if dataset is None:
            dataset = self.train_dataset
        return SchedulerRepeatSampler(
            env_ids=dataset[self.env_column],
            scheduler=self.scheduler,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
        )

    # Overrides of GRPOTrainer internals: trl's own (unannotated) signatures, with the types trl passes.
    def _calculate_rewards(self, inputs: list[dict[str, object]], prompts: list[object], completions: list[object],
                           completion_ids_list: list[list[int]]) -> torch.Tensor:
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.model.training:
            env_ids = gather_object([row[self.env_column] for row in inputs])
            weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
            rewards = (rewards_per_func * weights).nansum(dim=1).tolist()
            obs = observe_groups(self.scheduler, env_ids, rewards, self.num_generations)
            self.curriculum_observations.extend(obs)
            if self.step_log is not None:
                n = self.num_generations
                self.step_log.record(self.state.global_step + 1, self.scheduler, obs,
                                     [rewards[k:k + n] for k in range(0, len(rewards), n)])
        return rewards_per_func

    def _save_checkpoint(self, model: torch.nn.Module, trial: object) -> None:  # the scheduler state travels with every checkpoint
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            import json
            import os

            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            run_dir = self._get_output_dir(trial=trial)
            out = os.path.join(run_dir, f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}", "envevo_scheduler.json")
            with open(out, "w") as f:
                json.dump(self.scheduler.state_dict(), f)

    def load_scheduler_state(self, checkpoint_dir: str) -> None:
        """Restore the scheduler saved with a checkpoint (call before ``train(resume_from_checkpoint=…)``)."""
        import json
        import os

        with open(os.path.join(checkpoint_dir, "envevo_scheduler.json")) as f:
            self.scheduler.load_state_dict(json.load(f))


__all__ = ["EnvevoGRPOTrainer", "SchedulerRepeatSampler", "harbor_train_dataset"]
