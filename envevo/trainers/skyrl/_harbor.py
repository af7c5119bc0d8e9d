"""SkyRL 0.4: an envevo scheduler decides which Harbor tasks SkyRL's Harbor generator rolls out.

SkyRL trains on Harbor tasks through ``examples/train_integrations/harbor`` of its repository: a
``HarborTaskDataset`` (one row per task directory: ``prompt`` = the task path, ``env_extras``, ``uid``) feeds the
trainer's ``StatefulDataLoader``, and ``HarborGenerator`` runs ``n_samples_per_prompt`` Harbor trials per row. The
adapter replaces the two ends:

- :class:`EnvevoHarborDataset` has the same row layout, but item *k* is the task the scheduler serves next (the
  index SkyRL's sampler passes is ignored; a train batch is one ``scheduler.next(train_batch_size)`` window).
  Each draw gets its own ``uid`` (``<env_id>#<draw>``), so an environment served twice in one batch makes two
  GRPO groups. Built from ``envevo export RUN --format rl``
  (``OUT/tasks/`` is the Harbor dataset, ``OUT/index.parquet`` its lineages). Its ``state_dict`` — the scheduler's
  state — is saved by SkyRL's ``StatefulDataLoader`` into every checkpoint (``global_step_N/data.pt``).
- :class:`EnvevoGenerator` wraps any SkyRL generator (``HarborGenerator`` in practice): after each
  ``generate``, it feeds every group's rewards back, *before* the trainer's ``dynamic_sampling`` filters or
  replaces groups, so the scheduler sees the all-pass and all-fail groups that DAPO drops. A group the generator
  masked (a trial error or timeout: every rollout ``stop_reason == "error"``) is not counted.

:class:`EnvevoExpMixin` wires both into an experiment class: ``class Exp(EnvevoExpMixin, HarborExp)``, with the
scheduler options under the config's ``envevo`` key (see ``docs/trainers.md``).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skyrl.train.generators.base import GeneratorInput, GeneratorInterface, GeneratorOutput

from envevo.schedule import Observation, ScheduleError, Scheduler
from envevo.trainers._base import (
    ENV_ID,
    BatchDraws,
    build_scheduler,
    check_trainer_state,
    read_export_index,
    row_positions,
    trainer_state,
)
from envevo.trainers._runner import RunnerSpec, check_tasks, task_configs
from envevo.trainers.skyrl import HARBOR_GENERATOR

UID_SEP = "#"


class EnvevoHarborDataset:
    """SkyRL Harbor dataset whose rows follow an envevo scheduler (EL by default)."""

    def __init__(self, rows: list[dict[str, Any]], scheduler: Scheduler, batch_size: int = 1) -> None:
        self.rows = rows
        self.scheduler = scheduler
        self.draw = BatchDraws(scheduler, batch_size)  # one train batch = the scheduler's next window
        self.positions = row_positions([str(r[ENV_ID]) for r in rows], scheduler)
        for r in rows:
            if not (Path(r["task_dir"]) / "instruction.md").is_file():
                raise ScheduleError(f"task {r[ENV_ID]!r} has no instruction.md at {r['task_dir']}; re-export the run")
        self.draws = 0
        self.observations: list[Observation] = []

    @classmethod
    def from_export(cls, export_dir: str | os.PathLike[str], scheduler: Scheduler | str = "el", *, seed: int = 0,
                    group_size: int = 8, batch_size: int = 1, **options: Any) -> EnvevoHarborDataset:
        """The dataset of an rl export folder, scheduled by ``scheduler`` (an instance or a spec such as
        ``"el+patience"``; ``group_size`` = SkyRL's ``generator.n_samples_per_prompt``, ``batch_size`` =
        ``trainer.train_batch_size``)."""
        rows = read_export_index(export_dir)
        sched = build_scheduler(scheduler, rows=rows, seed=seed, group_size=group_size, **options)
        return cls(rows, sched, batch_size)

    # ---------------------------------------------------------------- HarborTaskDataset's contract
    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, object]:
        env = self.draw()
        self.draws += 1
        path = str(self.rows[self.positions[env]]["task_dir"])
        return {"prompt": path, "env_class": None, "env_extras": {"data_source": path, ENV_ID: env},
                "uid": f"{env}{UID_SEP}{self.draws}"}

    def collate_fn(self, item_list: list[dict[str, object]]) -> list[dict[str, object]]:
        return item_list

    # ---------------------------------------------------------------- feedback and checkpoints
    def observe(self, uid: str, rewards: list[float]) -> Observation:
        env, sep, _ = str(uid).rpartition(UID_SEP)
        if not sep or env not in self.positions:
            raise ScheduleError(f"rollout group {uid!r} was not drawn from this dataset")
        obs = self.scheduler.observe(env, rewards)
        self.observations.append(obs)
        return obs

    def state_dict(self) -> dict[str, object]:
        return trainer_state(draws=self.draws, queue=self.draw.state_dict())

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        check_trainer_state(state_dict, "EnvevoHarborDataset")
        self.draw.load_state_dict(state_dict["queue"])
        self.draws = int(state_dict["draws"])


def group_rewards(output: GeneratorOutput) -> dict[str, list[float]]:
    """instance id -> the rewards of its rollouts, in output order. Step-wise outputs count each trajectory's
    last step; token-level rewards are summed; instances the generator masked (every rollout an error) are left
    out."""
    ids = output.get("trajectory_ids")
    if ids is None:
        raise ScheduleError("a generator output without trajectory_ids cannot be mapped to environments")
    rewards = output["rewards"]
    last = output.get("is_last_step") or [True] * len(ids)
    stops = output.get("stop_reasons") or ["complete"] * len(ids)
    groups: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, bool] = defaultdict(lambda: True)
    for tid, r, is_last, stop in zip(ids, rewards, last, stops, strict=True):
        if not is_last:
            continue
        groups[tid.instance_id].append(float(sum(r)) if isinstance(r, list) else float(r))
        errors[tid.instance_id] &= stop == "error"
    return {uid: rs for uid, rs in groups.items() if not errors[uid]}


def runner_of(generator: object) -> RunnerSpec | None:
    """The runner a SkyRL generator is: its own ``runner`` (envevo's live generator), SkyRL's Harbor generator (a class
    of its repository's examples, not of the package, so known by name), or None (another generator, not checked)."""
    spec = getattr(type(generator), "runner", None)
    if isinstance(spec, RunnerSpec):
        return spec
    return HARBOR_GENERATOR if type(generator).__name__ == "HarborGenerator" else None


class EnvevoGenerator(GeneratorInterface):
    """A SkyRL generator that feeds every generated group back to an :class:`EnvevoHarborDataset`'s scheduler."""

    def __init__(self, inner: GeneratorInterface, dataset: EnvevoHarborDataset) -> None:
        self.inner = inner
        self.dataset = dataset
        runner = runner_of(inner)
        if runner is not None:  # before any rollout: what the dataset's tasks need, the generator must honour
            check_tasks(runner, task_configs(r["task_dir"] for r in dataset.rows))

    async def generate(self, input_batch: GeneratorInput, **kwargs: object) -> GeneratorOutput:
        output = await self.inner.generate(input_batch, **kwargs)
        if input_batch.get("batch_metadata") is None or input_batch["batch_metadata"].training_phase == "train":
            for uid, rewards in group_rewards(output).items():
                self.dataset.observe(uid, rewards)
        return output

    def __getattr__(self, name: str) -> Any:  # the rest of the inner generator's surface (e.g. metrics hooks)
        return getattr(self.inner, name)


class EnvevoExpMixin:
    """Mix into a SkyRL experiment (``class Exp(EnvevoExpMixin, HarborExp)``): the train dataset is the
    export ``cfg.data.train_data[0]`` scheduled by ``cfg.envevo`` ({scheduler, seed, options}); the generator
    is wrapped in :class:`EnvevoGenerator`."""

    cfg: Any

    def get_train_dataset(self) -> EnvevoHarborDataset:
        opts = dict(getattr(self.cfg, "envevo", None) or {})
        return EnvevoHarborDataset.from_export(
            self.cfg.data.train_data[0], str(opts.get("scheduler", "el")), seed=int(opts.get("seed", 0)),
            group_size=int(self.cfg.generator.n_samples_per_prompt), batch_size=int(self.cfg.trainer.train_batch_size),
            **dict(opts.get("options") or {}),
        )

    def get_generator(self, cfg: object, tokenizer: object, inference_engine_client: object) -> GeneratorInterface:
        inner = super().get_generator(cfg, tokenizer, inference_engine_client)  # type: ignore[misc]
        return EnvevoGenerator(inner, self.train_dataset)  # type: ignore[attr-defined]


__all__ = ["EnvevoExpMixin", "EnvevoGenerator", "EnvevoHarborDataset", "group_rewards", "runner_of"]
