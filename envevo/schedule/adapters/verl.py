"""verl: an envevo scheduler as verl's curriculum sampler.

verl (0.5 – 0.7.x) builds the train sampler from ``data.sampler.class_path`` / ``class_name`` as
``cls(data_source=dataset, data_config=config.data)`` and, after every step, calls ``update(batch)`` on a
sampler that subclasses ``verl.experimental.dataset.sampler.AbstractCurriculumSampler``.
:class:`EnvevoCurriculumSampler` is one:

- each dataset row is one environment; its ``extra_info`` holds ``index`` (the row's position, as verl
  expects), ``env_id`` (the export name), ``lineage`` and ``generation`` (``envevo export --format rl``);
- ``__iter__`` yields row positions in the scheduler's order, one per prompt; with ``rollout.n = 8``
  verl rolls out each prompt 8 times, i.e. one group of ``group_size`` rollouts;
- ``update(batch)`` maps every rollout back to its environment through ``extra_info.index`` (verl copies it
  to ``non_tensor_batch["index"]``), groups rollouts by ``uid`` (verl's GRPO group id), scores each rollout
  by the sum of ``token_level_scores`` and observes each group in batch order.

``data.dataloader_num_workers`` must be 0 (verl asserts it): worker processes would prefetch from a stale
copy of the scheduler. Scheduler options come from ``data.sampler`` keys: ``scheduler`` (spec, default
``el``), ``seed``, ``group_size`` (= ``actor_rollout_ref.rollout.n``, default 8), ``run_dir`` (build the
pool from a store instead of the dataset rows), ``options`` (a dict, e.g. ``{tau: 0.75, patience: 4}``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sized
from typing import Any

from verl import DataProto
from verl.experimental.dataset.sampler import AbstractCurriculumSampler

from envevo.schedule._base import Observation, Scheduler
from envevo.schedule._records import ScheduleError
from envevo.schedule.adapters._common import ENV_ID, build_scheduler, row_positions


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    if cfg is None:
        return default
    if isinstance(cfg, Mapping):
        return cfg.get(key, default)
    getter = getattr(cfg, "get", None)
    return getter(key, default) if getter else getattr(cfg, key, default)


def _plain(x: Any) -> Any:
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(x):
            return OmegaConf.to_container(x, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    return x


def dataset_extra_infos(data_source: Sized) -> list[dict[str, Any]]:
    """``extra_info`` of every row: from an ``RLHFDataset``'s dataframe, else by indexing the dataset."""
    frame = getattr(data_source, "dataframe", None)
    if frame is not None and "extra_info" in getattr(frame, "column_names", []):
        infos = frame["extra_info"]
    else:
        infos = [data_source[i].get("extra_info") for i in range(len(data_source))]  # type: ignore[index]
    out = []
    for k, info in enumerate(infos):
        if not isinstance(info, Mapping):
            raise ScheduleError(f"dataset row {k} has no extra_info; build it from `envevo export RUN --format rl`")
        out.append(dict(info))
    return out


class EnvevoCurriculumSampler(AbstractCurriculumSampler):
    """verl curriculum sampler driven by an envevo scheduler (EL by default)."""

    def __init__(self, data_source: Sized, data_config: Any, scheduler: Scheduler | None = None) -> None:
        infos = dataset_extra_infos(data_source)
        for k, info in enumerate(infos):
            if int(info.get("index", -1)) != k:
                raise ScheduleError(f"dataset row {k} has extra_info.index={info.get('index')!r}; "
                                    "it must be the row's position")
        scfg = _get(data_config, "sampler")
        self.scheduler = scheduler or build_scheduler(
            str(_get(scfg, "scheduler", "el")),
            rows=infos,
            run_dir=_get(scfg, "run_dir"),
            seed=int(_get(scfg, "seed", 0)),
            group_size=int(_get(scfg, "group_size", 8)),
            **dict(_plain(_get(scfg, "options", None)) or {}),
        )
        self.env_of_row = [str(info[ENV_ID]) for info in infos]
        self.positions = row_positions(self.env_of_row, self.scheduler)
        self.num_samples = len(infos)
        self.observations: list[Observation] = []

    def __iter__(self) -> Iterator[int]:
        for _ in range(self.num_samples):
            yield self.positions[self.scheduler.next(1)[0]]

    def __len__(self) -> int:
        return self.num_samples

    def update(self, batch: DataProto) -> None:
        nt = batch.non_tensor_batch
        if "index" in nt:
            index = [int(i) for i in nt["index"]]
        elif "extra_info" in nt:
            index = [int(info["index"]) for info in nt["extra_info"]]
        else:
            raise ScheduleError("a verl batch without `index` or `extra_info` cannot be mapped to environments")
        uid = list(nt["uid"]) if "uid" in nt else [str(i) for i in index]
        scores = batch.batch["token_level_scores"].sum(-1).detach().cpu().tolist()
        groups: dict[Any, tuple[int, list[float]]] = {}
        for u, i, s in zip(uid, index, scores, strict=True):
            if u in groups and groups[u][0] != i:
                raise ScheduleError(f"rollout group {u!r} mixes dataset rows {groups[u][0]} and {i}")
            groups.setdefault(u, (i, []))[1].append(float(s))
        for i, rewards in groups.values():
            if not 0 <= i < self.num_samples:
                raise ScheduleError(f"extra_info.index {i} is outside the dataset (0…{self.num_samples - 1})")
            self.observations.append(self.scheduler.observe(self.env_of_row[i], rewards))

    def state_dict(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state_dict["scheduler"])


__all__ = ["EnvevoCurriculumSampler", "dataset_extra_infos"]
