"""verl: the curriculum sampler loaded through data.sampler.class_path, updated with real DataProto batches."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("verl.experimental.dataset.sampler", reason="install the rl extra (verl 0.7.x)")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.dataset.sampler import AbstractCurriculumSampler  # noqa: E402

from envevo.schedule import ScheduleError, synthetic_lineages  # noqa: E402
from envevo.schedule.adapters.verl import EnvevoCurriculumSampler  # noqa: E402

N = 8  # rollout.n


def _dataset(pool):
    rows = [r for lin in pool for r in lin]
    return Dataset.from_list([
        {"prompt": [{"role": "user", "content": f"solve {r.id}"}], "data_source": "envevo",
         "extra_info": {"index": k, "env_id": r.id, "lineage": r.lineage, "generation": r.generation}}
        for k, r in enumerate(rows)
    ])


def _config(**sampler):
    return OmegaConf.create({
        "sampler": {"class_path": "pkg://envevo.schedule.adapters.verl", "class_name": "EnvevoCurriculumSampler",
                    **sampler},
        "dataloader_num_workers": 0, "shuffle": False,
    })


def _batch(indices, passes):
    """A verl batch: each prompt index repeated rollout.n times (one uid per prompt), scores at the last token."""
    idx, uid, scores = [], [], []
    for g, (i, p) in enumerate(zip(indices, passes, strict=True)):
        for k in range(N):
            idx.append(i)
            uid.append(f"uid-{g}")
            row = [0.0] * 5
            row[-1] = 1.0 if k < p else 0.0
            scores.append(row)
    return DataProto.from_dict(
        tensors={"token_level_scores": torch.tensor(scores)},
        non_tensors={"index": np.array(idx, dtype=object), "uid": np.array(uid, dtype=object)},
    )


def test_loaded_through_verl_create_rl_sampler():
    from verl.trainer.main_ppo import create_rl_sampler

    ds = _dataset(synthetic_lineages(3, 2, seed=0))
    sampler = create_rl_sampler(_config(scheduler="el", seed=1), ds)
    assert isinstance(sampler, EnvevoCurriculumSampler) and isinstance(sampler, AbstractCurriculumSampler)
    first = list(sampler)[:3]
    assert all(ds[i]["extra_info"]["env_id"].endswith("__g00") for i in first)
    with pytest.raises(AssertionError, match="num_workers must be 0"):
        create_rl_sampler(OmegaConf.merge(_config(), {"dataloader_num_workers": 2}), ds)


def test_update_maps_rollouts_back_through_extra_info_index_and_counts_passes():
    pool = synthetic_lineages(2, 2, seed=0)
    ds = _dataset(pool)
    s = EnvevoCurriculumSampler(ds, _config(options={"tau": 0.75}))
    it = iter(s)
    a, b = next(it), next(it)
    s.update(_batch([a, b], [8, 3]))
    obs = s.observations
    assert [(o.env_id, o.passes, o.n) for o in obs] == [
        (ds[a]["extra_info"]["env_id"], 8, 8), (ds[b]["extra_info"]["env_id"], 3, 8)]
    assert obs[0].advanced and not obs[1].advanced
    # the passed environment's lineage moves on to generation 1
    nxt = ds[next(it)]["extra_info"]["env_id"]
    assert nxt != ds[a]["extra_info"]["env_id"]


def test_state_round_trips_and_bad_batches_are_refused():
    pool = synthetic_lineages(2, 2, seed=0)
    ds = _dataset(pool)
    s1 = EnvevoCurriculumSampler(ds, _config(seed=4))
    it = iter(s1)
    i = next(it)
    s1.update(_batch([i], [8]))
    s2 = EnvevoCurriculumSampler(ds, _config(seed=4))
    s2.load_state_dict(json.loads(json.dumps(s1.state_dict())))
    assert list(s1)[:4] == list(s2)[:4]
    with pytest.raises(ScheduleError, match="outside the dataset"):
        s1.update(_batch([99], [1]))
    bad = Dataset.from_list([{"extra_info": {"index": 5, "env_id": "x", "lineage": "x", "generation": 0}}])
    with pytest.raises(ScheduleError, match="position"):
        EnvevoCurriculumSampler(bad, _config())
