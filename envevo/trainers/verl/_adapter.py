"""verl 0.9: an envevo scheduler chooses every prompt verl's v1 trainer fetches, and sees every finished group.

verl 0.9 builds its train sampler itself (``create_rl_sampler``: random or sequential, no plug-in), so the adapter
uses the two hooks verl 0.9 does have:

- ``data.custom_cls`` — the dataset class. :class:`EnvevoRLHFDataset` is verl's ``RLHFDataset``; item *k* of the
  train dataset is the row of the environment the scheduler serves next (the index verl's sampler passes is
  ignored; a train batch is one ``scheduler.next(data.train_batch_size)`` window, drawn when the previous one
  is used up). With ``data.dataloader_num_workers: 0`` verl fetches on demand, so each fetch sees the scheduler's
  current state. The validation dataset (``data.val_files``) is served in file order, untouched.
- ``trainer.v1.sampler.custom_sampler`` — the replay buffer. :class:`EnvevoReplayBuffer` (sync trainer) and
  :class:`EnvevoReplayBufferAsync` are verl's own buffers that, each time they poll TransferQueue, observe every
  prompt group that finished since the last poll — before DAPO's group filter (``algorithm.filter_groups``)
  evicts any — and otherwise sample exactly as verl's buffers do, DAPO included.

A rollout's reward is the sum of its ``rm_scores`` (verl's canonical reward, the one DAPO filters on); its
environment is the dataset row named by its ``index`` (``extra_info.index``, which ``envevo export --format rl``
sets to the row's position). The scheduler's state lives in the dataset, which verl's ``StatefulDataLoader``
saves with every checkpoint (``global_step_N/data.pt``) and restores on resume.

Scheduler options are read from ``data.envevo``: ``scheduler`` (a spec, default ``el``), ``seed``,
``group_size`` (must equal ``actor_rollout_ref.rollout.n``; checked), ``run_dir`` (build the pool from a store
instead of the rows), ``runner`` (what runs the agent loop's rollouts, a name of ``envevo.trainers.RUNNERS``: every
row's task is checked against it) and ``options`` (e.g. ``{tau: 0.75, patience: 4}``). ``docs/trainers.md`` has the config.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sized
from typing import Any

import transfer_queue as tq
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync
from verl.utils.dataset.rl_dataset import RLHFDataset

from envevo.schedule import Observation, ScheduleError, Scheduler
from envevo.trainers._base import ENV_ID, BatchDraws, build_scheduler, check_trainer_state, row_positions, trainer_state
from envevo.trainers._runner import check_tasks, task_configs
from envevo.trainers._runners import runner_spec

TRAIN = "train"


def _plain(x: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(x, resolve=True) if OmegaConf.is_config(x) else x


def dataset_extra_infos(data_source: Sized) -> list[dict[str, Any]]:
    """``extra_info`` of every row: from an ``RLHFDataset``'s dataframe, else by indexing the dataset."""
    frame = getattr(data_source, "dataframe", None)
    if frame is not None and "extra_info" in getattr(frame, "column_names", []):
        infos = frame["extra_info"]
    else:
        infos = [data_source[i].get("extra_info") for i in range(len(data_source))]  # type: ignore[index]
    out = []
    for k, info in enumerate(infos):
        if not isinstance(info, Mapping) or info.get(ENV_ID) is None:
            raise ScheduleError(f"dataset row {k} has no extra_info.env_id; "
                                "build the dataset from `envevo export RUN --format rl` (verl.parquet)")
        if int(info.get("index", -1)) != k:
            raise ScheduleError(f"dataset row {k} has extra_info.index={info.get('index')!r}; "
                                "it must be the row's position")
        out.append(dict(info))
    return out


class EnvevoRLHFDataset(RLHFDataset):
    """verl's ``RLHFDataset`` whose train items follow an envevo scheduler (EL by default)."""

    def __init__(self, data_files: object, tokenizer: object, config: Any, processor: object = None,
                 max_samples: int = -1, scheduler: Scheduler | None = None) -> None:
        super().__init__(data_files=data_files, tokenizer=tokenizer, config=config, processor=processor,
                         max_samples=max_samples)
        # verl builds train and validation sets from the same class; only the train files are scheduled.
        train = config.get("train_files")
        train_files = [train] if isinstance(train, str) else [str(f) for f in (_plain(train) or [])]
        files = [str(f) for f in self.original_data_files]
        self.scheduled = scheduler is not None or files == train_files
        self.scheduler: Scheduler | None = None
        if not self.scheduled:
            return
        infos = dataset_extra_infos(self)
        ecfg = dict(_plain(config.get("envevo")) or {})
        unknown = set(ecfg) - {"scheduler", "seed", "group_size", "run_dir", "options", "runner"}
        if unknown:
            raise ScheduleError(f"unknown data.envevo key(s) {sorted(unknown)}; "
                                "use scheduler, seed, group_size, run_dir, options, runner")
        if ecfg.get("runner"):  # what runs the agent loop's rollouts: every row's task must keep its guarantees there
            check_tasks(runner_spec(str(ecfg["runner"])), task_configs(i["task_dir"] for i in infos if i.get("task_dir")))
        self.scheduler = scheduler or build_scheduler(
            str(ecfg.get("scheduler", "el")), rows=infos, run_dir=ecfg.get("run_dir"),
            seed=int(ecfg.get("seed", 0)), group_size=int(ecfg.get("group_size", 8)),
            **dict(ecfg.get("options") or {}),
        )
        # one train batch = the scheduler's next window of train_batch_size environments
        self.draw = BatchDraws(self.scheduler, int(config.get("train_batch_size") or 1))
        self.env_of_row = [str(info[ENV_ID]) for info in infos]
        self.positions = row_positions(self.env_of_row, self.scheduler)
        self.observations: list[Observation] = []

    def __getitem__(self, item: int) -> dict[str, Any]:
        if self.scheduler is None:
            return super().__getitem__(item)  # type: ignore[no-any-return]
        return super().__getitem__(self.positions[self.draw()])  # type: ignore[no-any-return]

    def observe(self, row: int, rewards: list[float]) -> Observation:
        """Feed one finished group of dataset row ``row`` back to the scheduler."""
        if self.scheduler is None:
            raise ScheduleError("the validation dataset has no scheduler to observe")
        if not 0 <= row < len(self.env_of_row):
            raise ScheduleError(f"extra_info.index {row} is outside the dataset (0…{len(self.env_of_row) - 1})")
        obs = self.scheduler.observe(self.env_of_row[row], rewards)
        self.observations.append(obs)
        return obs

    # StatefulDataLoader saves and restores these with verl's checkpoint (data.pt).
    def state_dict(self) -> dict[str, object]:
        if self.scheduler is None:
            return {}
        return trainer_state(draws=self.draw.state_dict())

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if self.scheduler is None or not state_dict:
            return
        check_trainer_state(state_dict, "EnvevoRLHFDataset")
        self.draw.load_state_dict(state_dict["draws"])


def _as_int(value: object) -> int:
    """A scalar read back from TransferQueue: a tensor, a NonTensorData wrapper or a plain number."""
    if not hasattr(value, "item") and hasattr(value, "data"):
        value = value.data
    if hasattr(value, "item"):
        value = value.item()
    if not isinstance(value, (int, float, str)):  # int() would raise TypeError: say what it was instead
        raise ScheduleError(f"TransferQueue gave {value!r} as a dataset row index, not a number")
    return int(value)


class _ObservesFinishedGroups:
    """Replay-buffer mixin: after each TransferQueue poll, observe the prompt groups that finished since.

    verl passes custom buffers its bound ``trainer._add_prompts_to_generate`` as ``refill_fn``; through it the
    buffer reaches the trainer's config (DAPO, rollout.n) and its train dataset (the scheduler)."""

    finished_keys: dict[str, set[str]]
    pending_keys: dict[str, set[str]]
    running_keys: dict[str, set[str]]
    failure_keys: dict[str, set[str]]
    partitions: dict[str, dict[str, dict[str, object]]]

    def _envevo_init(self, kwargs: dict[str, object], *, sync: bool) -> dict[str, object]:
        trainer = getattr(kwargs.get("refill_fn"), "__self__", None)
        if trainer is None or not hasattr(trainer, "config"):
            raise ScheduleError("EnvevoReplayBuffer must be built by verl's v1 trainer "
                                "(trainer.v1.sampler.custom_sampler)")
        self._trainer = trainer
        self._observed: set[str] = set()
        self.envevo_observations = 0
        # Give the buffer verl's own DAPO / failed-group settings, as verl does for its built-in buffers.
        cfg = trainer.config
        extra: dict[str, object] = {
            "filter_groups_metric": trainer._resolve_filter_groups_metric(),
            "sync_refill_failed_groups": bool(cfg.trainer.v1.sampler.get("sync_refill_failed_groups", False)),
        }
        if sync:
            dapo = extra["filter_groups_metric"] is not None
            filter_groups = cfg.algorithm.get("filter_groups", None)
            train_batch_size = cfg.data.train_batch_size
            extra.update(
                train_batch_size=train_batch_size,
                gen_batch_size=1 if dapo or extra["sync_refill_failed_groups"]
                else (cfg.data.get("gen_batch_size", None) or train_batch_size),
                max_inflight_gen_batches=filter_groups.get("max_inflight_gen_batches", 1) if dapo else 1,
            )
        self._group_size = int(cfg.actor_rollout_ref.rollout.n)
        want = cfg.data.get("envevo", {}).get("group_size", 8)
        if int(want) != self._group_size:
            raise ScheduleError(f"data.envevo.group_size ({want}) must equal actor_rollout_ref.rollout.n "
                                f"({self._group_size})")
        return extra

    def _dataset(self) -> EnvevoRLHFDataset:
        ds = getattr(self._trainer, "train_dataset", None)
        if not isinstance(ds, EnvevoRLHFDataset) or ds.scheduler is None:
            raise ScheduleError("EnvevoReplayBuffer needs data.custom_cls = EnvevoRLHFDataset "
                                "(pkg://envevo.trainers.verl)")
        return ds

    def _sync_metadata_from_transfer_queue(self) -> None:
        super()._sync_metadata_from_transfer_queue()  # type: ignore[misc]
        self.observe_finished_groups()

    def observe_finished_groups(self) -> list[Observation]:
        """Observe every train group whose status turned ``finished`` since the last call (failed groups —
        a session raised — are not counted, as verl does not train on them unless refilled)."""
        live = (self.pending_keys[TRAIN] | self.running_keys[TRAIN] | self.finished_keys[TRAIN]
                | self.failure_keys[TRAIN])
        self._observed &= live  # groups verl has cleared cannot come back (uids are fresh uuid4s)
        new = sorted(self.finished_keys[TRAIN] - self._observed)
        if not new:
            return []
        keys = [k for k in self.partitions[TRAIN] if k.split("_")[0] in set(new)]
        rows: dict[str, set[int]] = defaultdict(set)
        # one reward per session: a multi-output agent loop copies the final reward onto every output
        by_session: dict[str, dict[str, float]] = defaultdict(dict)
        if keys:
            data = tq.kv_batch_get(keys=keys, partition_id=TRAIN, select_fields=["rm_scores", "index"])
            for key, scores, index in zip(keys, list(data["rm_scores"]), list(data["index"]), strict=True):
                uid, session, _ = key.split("_", 2)
                by_session[uid][session] = float(scores.sum().item())
                rows[uid].add(_as_int(index))
        ds = self._dataset()
        out = []
        for uid in new:
            self._observed.add(uid)
            if not by_session[uid]:
                continue
            if len(rows[uid]) != 1:
                raise ScheduleError(f"rollout group {uid!r} mixes dataset rows {sorted(rows[uid])}")
            out.append(ds.observe(rows[uid].pop(), list(by_session[uid].values())))
            self.envevo_observations += 1
        return out


class EnvevoReplayBuffer(_ObservesFinishedGroups, ReplayBuffer):
    """verl's sync ``ReplayBuffer`` (``trainer.v1.trainer_mode: sync``) feeding every finished group back."""

    def __init__(self, **kwargs: object) -> None:
        extra = self._envevo_init(kwargs, sync=True)
        super().__init__(**kwargs, **extra)


class EnvevoReplayBufferAsync(_ObservesFinishedGroups, ReplayBufferAsync):
    """verl's ``ReplayBufferAsync`` (the async trainer modes) feeding every finished group back."""

    def __init__(self, **kwargs: object) -> None:
        extra = self._envevo_init(kwargs, sync=False)
        super().__init__(**kwargs, **extra)


__all__ = ["EnvevoRLHFDataset", "EnvevoReplayBuffer", "EnvevoReplayBufferAsync", "dataset_extra_infos"]
