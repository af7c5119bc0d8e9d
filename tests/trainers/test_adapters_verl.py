"""verl 0.9: the documented config composed by verl's own Hydra config, its v1 sync trainer's dataset, dataloader,
replay buffer (DAPO on) and checkpoint file, over a real (local Ray) TransferQueue.

A GPU run adds the agent loop (vLLM/SGLang) that writes the trajectories and verl's reward loop; here a CPU stand-in
writes them in the agent loop's TransferQueue layout (keys ``{uid}_{session}_{output}``, fields ``rm_scores``,
``index``, tags ``status``)."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("verl.trainer.ppo.v1.replay_buffer", reason="install the rl extra (verl 0.9)")

import hydra  # noqa: E402
import ray  # noqa: E402
import torch  # noqa: E402
import transfer_queue as tq  # noqa: E402
import verl  # noqa: E402
from verl.trainer.ppo.v1 import get_trainer_cls  # noqa: E402
from verl.utils.tensordict_utils import list_of_dict_to_tensordict  # noqa: E402

from envevo.schedule import ScheduleError  # noqa: E402
from envevo.trainers.verl import EnvevoReplayBuffer, EnvevoRLHFDataset  # noqa: E402
from tests.trainers._trainer_support import cli_overrides, rl_export, tiny_gpt2  # noqa: E402

N = 8  # rollout.n in the documented config
PASSES = {0: N, 1: N // 2}  # the stand-in policy: generation 0 always solved, generation 1 half the time


@pytest.fixture(scope="module")
def transfer_queue():
    # address="local": never attach to another Ray cluster running on this machine
    # (logical CPUs: the TransferQueue controller and storage unit are actors that each reserve one)
    ray.init(address="local", num_cpus=8, include_dashboard=False, log_to_driver=False,
             _temp_dir=tempfile.mkdtemp(prefix="envevo-ray-", dir="/tmp"))
    tq.init({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}})
    yield
    tq.close()
    ray.shutdown()


def _config(tmp_path: Path, export: Path, **extra: object):
    model_dir = tmp_path / "model"
    if not model_dir.exists():
        words = [w for f in (export / "tasks").glob("*/instruction.md") for w in f.read_text().split()]
        model, tok = tiny_gpt2(words)
        model.save_pretrained(model_dir)
        tok.save_pretrained(model_dir)
    rl, val = str(export / "index.parquet"), tmp_path / "val.parquet"
    val.write_bytes((export / "index.parquet").read_bytes())  # validation: another file, served in file order
    overrides = [o.replace("runs/demo/rl/index.parquet", rl).replace("runs/demo/val/index.parquet", str(val))
                 for o in cli_overrides("verl")]
    overrides += [f"actor_rollout_ref.model.path={model_dir}", "data.train_batch_size=2",
                  "data.filter_overlong_prompts=false", "data.max_prompt_length=64", "trainer.logger=[]",
                  *(f"{k}={v}" for k, v in extra.items())]
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with hydra.initialize_config_dir(str(config_dir), version_base=None):
        return hydra.compose("ppo_trainer", overrides=overrides)


class StandInAgentLoop:
    """Plays verl's AgentLoopManagerTQ: for each prompt, N sessions with a reward by the row's generation."""

    def __init__(self):
        self.groups: list[str] = []  # env ids, in dispatch order

    def generate_sequences(self, batch):
        for i in range(len(batch)):
            uid = batch["uid"][i]
            info = batch["extra_info"][i]
            info = getattr(info, "data", info)
            passes = PASSES[int(info["generation"])]
            self.groups.append(info["env_id"])
            rows = [{"rm_scores": torch.tensor([0.0, 1.0 if s < passes else 0.0]), "index": int(info["index"])}
                    for s in range(N)]
            tq.kv_batch_put(keys=[f"{uid}_{s}_0" for s in range(N)], partition_id="train",
                            fields=list_of_dict_to_tensordict(rows), tags=[{"status": "success"}] * N)
            tq.kv_put(key=uid, partition_id="train", tag={"status": "finished"})


def _trainer(cfg):
    trainer = get_trainer_cls(cfg.trainer.v1.trainer_mode)(config=cfg)
    trainer._init_tokenizer()
    trainer._init_dataloader()
    trainer.global_steps = 1
    trainer.agent_loop_manager = StandInAgentLoop()
    return trainer


@pytest.mark.timeout(600)
def test_scheduler_picks_each_batch_and_sees_the_groups_dapo_evicts(tmp_path, transfer_queue):
    export = rl_export(tmp_path, lineages=3, generations=2)
    cfg = _config(tmp_path, export)
    trainer = _trainer(cfg)
    assert isinstance(trainer.train_dataset, EnvevoRLHFDataset) and trainer.train_dataset.scheduler is not None
    assert trainer.val_dataset.scheduler is None  # validation rows are served in file order
    buffer = trainer.replay_buffer
    assert isinstance(buffer, EnvevoReplayBuffer) and buffer.filter_groups_metric == "reward"

    trainer.prepare_step()  # verl's step: dispatch one train batch, then sample finished groups from the buffer
    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=2)

    served = trainer.agent_loop_manager.groups
    assert all(e.endswith("__g00") for e in served[:2])  # EL starts at generation 0
    assert {e for e in served if e.endswith("__g00")} == {f"lin{k}__g00" for k in range(3)}
    # Every finished group reached the scheduler, the all-pass ones DAPO evicted included.
    obs = trainer.train_dataset.observations
    # (in the order the groups finished, which TransferQueue does not fix)
    assert Counter(o.env_id for o in obs) <= Counter(served) and len(obs) >= len(served) - 2
    evicted = sum(1 for o in obs if o.passes == N)
    assert metrics["training/filter_groups/evicted_samples"] == evicted >= 3
    assert all(o.advanced for o in obs if o.env_id.endswith("__g00") and not o.late)
    # What verl trains on: the mixed (generation 1) groups only, chosen by the scheduler after generation 0 passed.
    got = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["index"])
    rows = {int(getattr(i, "data", i)) for i in list(got["index"])}
    assert {trainer.train_dataset.env_of_row[r] for r in rows} <= {f"lin{k}__g01" for k in range(3)}
    tq.kv_clear(keys=batch.keys, partition_id="train")


@pytest.mark.timeout(600)
def test_scheduler_state_travels_in_verls_checkpoint_file(tmp_path, transfer_queue):
    export = rl_export(tmp_path, lineages=2, generations=2)
    cfg = _config(tmp_path, export)
    a = _trainer(cfg)
    first = a._next_train_batch(2)
    for info in first["extra_info"]:  # both generation-0 groups pass
        a.train_dataset.observe(int(getattr(info, "data", info)["index"]), [1.0] * N)
    path = tmp_path / "data.pt"
    torch.save(a.train_dataloader.state_dict(), path)  # what verl's _save_checkpoint writes

    b = _trainer(cfg)
    b.train_dataloader.load_state_dict(torch.load(path, weights_only=False))  # what _load_checkpoint does
    nxt_a = [getattr(i, "data", i)["env_id"] for i in a._next_train_batch(2)["extra_info"]]
    nxt_b = [getattr(i, "data", i)["env_id"] for i in b._next_train_batch(2)["extra_info"]]
    assert nxt_a == nxt_b and all(e.endswith("__g01") for e in nxt_a)


def test_group_size_must_match_rollout_n_and_rows_must_be_an_export(tmp_path, transfer_queue):
    export = rl_export(tmp_path, lineages=1, generations=1)
    with pytest.raises(ScheduleError, match="rollout.n"):
        get_trainer_cls("sync")(config=_config(tmp_path, export, **{"actor_rollout_ref.rollout.n": 4}))
    # the runner named for the agent loop must keep what every row's task needs: verifiers' cannot build
    with pytest.raises(ScheduleError, match=r"HarborTaskset.*lin0__g00: a Dockerfile build\); export with `--images`"):
        _trainer(_config(tmp_path, export, **{"+data.envevo.runner": "verifiers-harbor"}))
    _trainer(_config(tmp_path, export, **{"+data.envevo.runner": "harbor-envevo-env"}))
    import pyarrow.parquet as pq

    table = pq.read_table(export / "index.parquet").drop_columns(["extra_info"])
    pq.write_table(table, export / "index.parquet")
    with pytest.raises(ScheduleError, match="envevo export"):
        _trainer(_config(tmp_path, export))
