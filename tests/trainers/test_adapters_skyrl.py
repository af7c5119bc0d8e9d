"""SkyRL 0.4: the documented experiment config parsed by SkyRL's own config loader, its train dataloader, generator
input/output types, the trainer's dynamic_sampling (DAPO filter) and its data.pt checkpoint, driving the adapter.

A GPU run adds vLLM serving the policy, Harbor trials producing the rewards and FSDP updates. Here the Harbor
generator (SkyRL's ``examples/train_integrations/harbor``, which needs Harbor and vLLM) is a CPU stand-in that
returns SkyRL ``GeneratorOutput`` rewards by the task's generation."""

from __future__ import annotations

import asyncio
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("skyrl.train.generators.base", reason="install the skyrl extra (make skyrl-venv)")

import torch  # noqa: E402
from skyrl.train.config import SkyRLTrainConfig  # noqa: E402
from skyrl.train.generators.base import GeneratorInterface  # noqa: E402
from skyrl.train.generators.utils import prepare_generator_input  # noqa: E402
from skyrl.train.trainer import RayPPOTrainer  # noqa: E402
from skyrl.train.utils.trainer_utils import build_dataloader  # noqa: E402

from envevo.schedule import ScheduleError  # noqa: E402
from envevo.trainers.skyrl import EnvevoGenerator, EnvevoHarborDataset  # noqa: E402
from tests.trainers._trainer_support import rl_export, snippet  # noqa: E402

PASSES = {0: 1.0, 1: 0.5}  # the stand-in policy: generation 0 always solved, generation 1 half the time...
MIXED = "lin3__g00"  # ...but this one, 7/8: it passes EL's tau but is not filtered, since SkyRL 0.4.0's filter
#                      asserts when it drops every group of a batch


class StandInHarborGenerator(GeneratorInterface):
    """Plays HarborGenerator: one trajectory per (task path, repetition), reward by the task's generation; a task
    whose name is in ``failing`` comes back masked, as HarborGenerator masks a prompt whose trial errored."""

    def __init__(self, failing: frozenset[str] = frozenset()):
        self.failing = failing
        self.prompts: list[str] = []

    async def generate(self, input_batch, **kwargs):
        ids, rewards, stops = input_batch["trajectory_ids"], [], []
        for path, tid in zip(input_batch["prompts"], ids, strict=True):
            name = Path(path).name
            self.prompts.append(name)
            if name in self.failing:
                rewards.append(0.0)
                stops.append("error")
                continue
            share = 7 / 8 if name == MIXED else PASSES[int(name.rsplit("__g", 1)[1])]
            rewards.append(1.0 if tid.repetition_id < share * 8 else 0.0)
            stops.append("complete")
        n = len(ids)
        return {"prompt_token_ids": [[1]] * n, "response_ids": [[2]] * n, "rewards": rewards,
                "loss_masks": [[1]] * n, "stop_reasons": stops, "rollout_metrics": {}, "rollout_logprobs": None,
                "trajectory_ids": ids, "is_last_step": [True] * n}


def _documented_experiment(export: Path, failing: frozenset[str] = frozenset()):
    """Run docs/trainers.md's SkyRL snippet. Its two imports from SkyRL's repository examples (which need Harbor and
    vLLM) are stood in for: the config class adds what HarborSkyRLConfig adds, the experiment's generator is the
    stand-in."""

    @dataclass
    class HarborSkyRLConfig(SkyRLTrainConfig):
        harbor_trial_config: dict[str, Any] = field(default_factory=dict)

    class HarborExp:
        def __init__(self, cfg):
            self.cfg = cfg
            self.train_dataset = self.get_train_dataset()

        def get_generator(self, cfg, tokenizer, inference_engine_client):
            return StandInHarborGenerator(failing)

    stub = types.ModuleType("examples.train_integrations.harbor.entrypoints.main_harbor")
    stub.HarborExp, stub.HarborSkyRLConfig = HarborExp, HarborSkyRLConfig
    names = ["examples", "examples.train_integrations", "examples.train_integrations.harbor",
             "examples.train_integrations.harbor.entrypoints"]
    saved = {k: sys.modules.get(k) for k in [*names, stub.__name__]}
    sys.modules.update({k: types.ModuleType(k) for k in names} | {stub.__name__: stub})
    try:
        ns: dict[str, Any] = {}
        exec(snippet("skyrl").replace("runs/demo/rl", str(export)), ns)  # noqa: S102 - our own docs
    finally:
        for k, v in saved.items():
            sys.modules.pop(k) if v is None else sys.modules.__setitem__(k, v)
    cfg = ns["cfg"]
    exp = ns["EnvevoHarborExp"](cfg)
    return cfg, exp, exp.get_generator(cfg, None, None)


def _step(cfg, dataloader_iter, generator, step: int):
    """One pass of RayPPOTrainer.train's loop head: prompts -> generator input -> generate -> dynamic sampling."""
    prompts = next(dataloader_iter)
    gen_input, uids = prepare_generator_input(prompts, cfg.generator.n_samples_per_prompt, {},
                                              cfg.environment.env_class, "train", step)
    out = asyncio.run(generator.generate(gen_input))
    return prompts, out, uids


def test_scheduler_picks_harbor_tasks_and_sees_groups_dynamic_sampling_drops(tmp_path):
    export = rl_export(tmp_path, lineages=4, generations=2)
    cfg, exp, generator = _documented_experiment(export)
    ds = exp.train_dataset
    assert isinstance(ds, EnvevoHarborDataset) and isinstance(generator, EnvevoGenerator)
    assert cfg.generator.n_samples_per_prompt == ds.scheduler.group_size == 8
    assert cfg.trainer.algorithm.dynamic_sampling.type == "filter"
    loader = build_dataloader(cfg, ds, is_train=True)  # SkyRL's own train dataloader (shuffle=True, seeded)
    it = iter(loader)
    holder = types.SimpleNamespace(cfg=cfg, dynamic_sampling_state=None)

    prompts, out, uids = _step(cfg, it, generator, 1)
    assert [Path(p["prompt"]).name for p in prompts] == [p["env_extras"]["env_id"] for p in prompts]
    assert all(p["prompt"].endswith("__g00") for p in prompts)  # EL starts at generation 0, not a shuffle
    assert (Path(prompts[0]["prompt"]) / "instruction.md").is_file()  # a Harbor task dir, as HarborGenerator needs
    # DAPO's filter drops the all-pass groups and asks for another batch; the scheduler has counted them.
    _, _, keep_sampling = RayPPOTrainer.handle_dynamic_sampling(holder, out, uids)
    assert keep_sampling
    assert [o.env_id for o in ds.observations] == [p["env_extras"]["env_id"] for p in prompts]
    assert all(o.advanced for o in ds.observations)

    # ...so the batch dynamic sampling draws next moves those lineages to generation 1, whose mixed groups it keeps.
    first_mixed = {p["uid"] for p in prompts if p["env_extras"]["env_id"] == MIXED}
    prompts, out, uids = _step(cfg, it, generator, 2)
    envs = [p["env_extras"]["env_id"] for p in prompts]
    assert sorted(envs) == [f"lin{k}__g01" for k in range(4)]
    _, kept_uids, keep_sampling = RayPPOTrainer.handle_dynamic_sampling(holder, out, uids)
    assert not keep_sampling  # a full batch of mixed groups: this is what SkyRL trains on
    assert set(kept_uids) <= first_mixed | {p["uid"] for p in prompts}
    assert len(set(kept_uids)) == cfg.trainer.train_batch_size
    assert len(ds.observations) == ds.draws == 8  # every drawn group observed once


def test_masked_groups_are_not_counted_and_state_rides_in_data_pt(tmp_path):
    export = rl_export(tmp_path, lineages=4, generations=2)
    cfg, exp, generator = _documented_experiment(export, failing=frozenset({"lin0__g00"}))
    ds = exp.train_dataset
    loader = build_dataloader(cfg, ds, is_train=True)
    it = iter(loader)
    prompts, _, _ = _step(cfg, it, generator, 1)
    assert {o.env_id for o in ds.observations} == {p["env_extras"]["env_id"] for p in prompts} - {"lin0__g00"}
    path = tmp_path / "data.pt"
    torch.save(loader.state_dict(), path)  # what RayPPOTrainer.save_checkpoints writes

    _, exp2, _ = _documented_experiment(export)
    loader2 = build_dataloader(cfg, exp2.train_dataset, is_train=True)
    loader2.load_state_dict(torch.load(path, weights_only=False))  # what load_checkpoints does
    a, b = next(it), next(iter(loader2))
    assert [p["uid"] for p in a] == [p["uid"] for p in b]


def test_foreign_groups_and_incomplete_exports_are_refused(tmp_path):
    export = rl_export(tmp_path, lineages=1, generations=1)
    ds = EnvevoHarborDataset.from_export(export, "el", group_size=8)
    with pytest.raises(ScheduleError, match="not drawn from this dataset"):
        ds.observe("other__g00#1", [1.0])
    (export / "index.parquet").unlink()
    with pytest.raises(ScheduleError, match="envevo export"):
        EnvevoHarborDataset.from_export(export)
