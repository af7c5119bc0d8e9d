"""TRL: the scheduler-driven RepeatSampler layout, HarborSpec loading the rl export, and a real (tiny, CPU)
GRPOTrainer run on it feeding rewards back."""

from __future__ import annotations

from pathlib import Path

import pytest

trl = pytest.importorskip("trl", reason="install the rl extra: pip install -e '.[rl]'")

from datasets import Dataset  # noqa: E402
from trl.trainer.utils import RepeatSampler  # noqa: E402

from envevo.schedule import ScheduleError, make_scheduler, synthetic_lineages  # noqa: E402
from envevo.trainers import lineages_from_rows, observe_groups  # noqa: E402
from envevo.trainers.trl import EnvevoGRPOTrainer, SchedulerRepeatSampler  # noqa: E402
from tests.trainers._trainer_support import rl_export, snippet, tiny_gpt2  # noqa: E402


def _rows(pool):
    return [{"prompt": f"solve {r.id}", "env_id": r.id, "lineage": r.lineage, "generation": r.generation,
             "D_T": r.D_T} for lin in pool for r in lin]


def test_sampler_has_trl_repeat_sampler_layout_and_length():
    pool = synthetic_lineages(4, 2, seed=2)
    ds = Dataset.from_list(_rows(pool))
    kw = dict(mini_repeat_count=4, batch_size=3, repeat_count=2)
    ours = SchedulerRepeatSampler(ds["env_id"], make_scheduler("el", pool, group_size=4), **kw)
    theirs = RepeatSampler(ds, shuffle=False, **kw)
    a, b = list(ours), list(theirs)
    assert len(ours) == len(theirs) == len(a) == len(b)
    block = kw["mini_repeat_count"] * kw["batch_size"] * kw["repeat_count"]
    for k in range(0, len(a), block):  # same structure: each index 4x in a row, chunk repeated twice
        ca = a[k:k + block]
        half = block // 2
        assert ca[:half] == ca[half:]
        assert all(len(set(ca[j:j + 4])) == 1 for j in range(0, half, 4))
    # the first chunk is EL's generation-0 window (4 lineages, 3 per chunk)
    first = {ds[i]["env_id"] for i in a[:12]}
    assert all(e.endswith("__g00") for e in first) and len(first) == 3


def test_feedback_is_identical_whatever_the_rank_and_rejects_mixed_groups():
    pool = synthetic_lineages(2, 2, seed=0)
    s1, s2 = make_scheduler("el", pool, group_size=2), make_scheduler("el", pool, group_size=2)
    ids = s1.next(2)
    s2.next(2)
    env_ids = [ids[0], ids[0], ids[1], ids[1]]
    for s in (s1, s2):
        obs = observe_groups(s, env_ids, [1.0, 1.0, 0.0, 1.0], 2)
    assert [o.passes for o in obs] == [2, 1] and obs[0].advanced
    assert s1.state_dict() == s2.state_dict()
    with pytest.raises(ScheduleError, match="mix environments"):
        observe_groups(s1, [ids[0], ids[1]], [1.0, 1.0], 2)
    with pytest.raises(ScheduleError, match="lacks"):
        lineages_from_rows([{"env_id": "x"}])


def _documented_dataset(export):
    """docs/trainers.md's TRL snippet up to the dataset (the rest needs a hub model and Harbor in-process)."""
    src = snippet("trl").replace("runs/demo/rl", str(export))
    ns: dict = {}
    exec(src[: src.index("args = ")], ns)  # noqa: S102 - our own docs
    return ns["spec"], ns["dataset"]


def test_harbor_spec_loads_the_export_and_the_scheduler_reads_its_rows(tmp_path):
    export = rl_export(tmp_path, lineages=3, generations=2)
    spec, ds = _documented_dataset(export)
    assert len(ds) == 6 and {"prompt", "task_dir", "env_id", "lineage", "generation"} <= set(ds.column_names)
    assert all(Path(d).name == e for d, e in zip(ds["task_dir"], ds["env_id"], strict=True))
    sampler = SchedulerRepeatSampler(ds["env_id"], make_scheduler("el", lineages_from_rows(ds.to_list()),
                                                                  group_size=8), mini_repeat_count=8)
    assert all(ds[i]["env_id"].endswith("__g00") for i in list(sampler)[:24])


@pytest.mark.timeout(600)
def test_real_grpo_trainer_serves_the_curriculum_and_observes_every_group(tmp_path):
    from trl import GRPOConfig

    export = rl_export(tmp_path, lineages=3, generations=2)
    _, ds = _documented_dataset(export)
    # HarborSpec leaves the prompt empty (its Harbor env adds the instruction on reset); without Harbor in this
    # venv the instruction goes into the prompt and a reward function scores the completion.
    ds = ds.map(lambda r: {"prompt": [{"role": "user", "content": Path(r["task_dir"], "instruction.md").read_text()}]})
    words = [w for p in ds["prompt"] for w in p[0]["content"].split()] + ["a", "b"]
    model, tok = tiny_gpt2(words)
    seen: list[str] = []

    def reward(completions, env_id, **kw):  # the dataset column arrives as a reward kwarg
        seen.extend(env_id)
        return [1.0] * len(completions)  # every rollout passes: EL must advance each served environment

    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=3, max_steps=3, report_to=[], use_cpu=True, logging_steps=1,
                      save_strategy="no", seed=0, dataloader_num_workers=0)
    trainer = EnvevoGRPOTrainer(model=model, processing_class=tok, reward_funcs=reward, args=args,
                                train_dataset=ds, scheduler="el")
    trainer.train()
    obs = trainer.curriculum_observations
    assert len(obs) == 3  # one group (generation batch 4 = one environment x 4) per step
    assert all(o.n == 4 and o.passes == 4 and o.solicited for o in obs)
    # The dataloader draws one generation batch ahead, so an environment can be served once more before its
    # passing group comes back: that group is accounted as late, never lost, and each environment passes once.
    assert [o.env_id for o in obs] == seen[::4]
    passed = [o.env_id for o in obs if o.advanced]
    assert len(passed) == len(set(passed)) >= 2
    assert all(o.late for o in obs if not o.advanced)
    assert all(o.env_id.endswith("__g00") for o in obs)
    assert trainer.scheduler.progress()["observed"] == 3


def _tool_model():
    """The tiny GPT-2 with a chat template whose tool calls TRL knows how to parse (its Qwen3 template)."""
    from trl.chat_template_utils import qwen3_chat_template

    model, tok = tiny_gpt2(["a", "b"])
    tok.chat_template = qwen3_chat_template
    return model, tok


def _task_rows(tasks):
    return Dataset.from_list([{"prompt": [{"role": "user", "content": ""}], "task_dir": str(t), "env_id": t.name,
                               "lineage": t.name, "generation": 0, "D_T": 1.0} for t in tasks])


@pytest.mark.sandbox
@pytest.mark.timeout(900)
def test_trl_drives_envevos_runner_like_its_own_env_and_a_tool_shim_scores_zero(tmp_path):
    """GRPOTrainer builds EnvevoBashEnv from environment_factory, takes its `bash` tool and its get_reward column;
    the tool calls a model would make are made here through the trainer's own tool dict (a real trial each)."""
    import os

    from trl import GRPOConfig

    from envevo.trainers.trl import bash_environment
    from tests.trainers.test_trl_env import SEPARATE, TR_SHIM, _solution

    if not os.environ.get("ENVEVO_RUNTIME_PYTHON"):
        pytest.skip("`make test` runs this with ENVEVO_RUNTIME_PYTHON, envevo's own venv (Harbor is not in this one)")
    ds = _task_rows([SEPARATE])
    model, tok = _tool_model()
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=3, max_steps=1, report_to=[], use_cpu=True, save_strategy="no",
                      dataloader_num_workers=0)
    trainer = EnvevoGRPOTrainer(model=model, processing_class=tok, args=args, train_dataset=ds,
                                environment_factory=bash_environment("podman"), scheduler="el")
    assert trainer.reward_func_names == ["EnvevoBashEnv"]  # TRL made get_reward the reward column
    env = trainer._environment_pool[None][0]
    tools = {t.__name__: t for t in trainer._env_tools[None]}
    assert set(tools) == {"bash"}

    def rollout(*commands):
        prompt = env.reset(**ds[0])
        assert "primes" in prompt
        for c in commands:
            tools["bash"](c)
        return trainer.reward_funcs[-1](environments=[env])

    assert rollout(TR_SHIM) == [0.0]
    assert rollout(_solution(SEPARATE)) == [1.0]


def test_trl_harbor_env_is_refused_for_tasks_whose_guarantees_it_drops(tmp_path):
    from trl import GRPOConfig
    from trl.experimental.harbor import HarborSpec

    from tests.trainers.test_trl_env import SEPARATE

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    import shutil

    shutil.copytree(SEPARATE, tasks / SEPARATE.name)
    spec = HarborSpec(str(tmp_path))
    model, tok = _tool_model()
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=3, max_steps=1, report_to=[], use_cpu=True, save_strategy="no",
                      dataloader_num_workers=0)
    kw = dict(model=model, processing_class=tok, args=args, train_dataset=_task_rows([tasks / SEPARATE.name]),
              environment_factory=spec.environment_factory, reward_funcs=spec.reward_funcs)
    with pytest.raises(ScheduleError, match="separate-verifier: separate verifier, artifacts / collect hooks, "
                                            "no-network.*bash_environment"):
        EnvevoGRPOTrainer(**kw)
    with pytest.warns(UserWarning, match="`HarborEnv` does not honour what 1 task"):
        EnvevoGRPOTrainer(**kw, allow_trl_harbor_env=True)
