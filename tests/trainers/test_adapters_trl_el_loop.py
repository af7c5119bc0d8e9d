"""The Evolution-Lineage scheduler in a real GRPO loop: TRL's GRPOTrainer (a 1-layer GPT-2 built from a config, CPU)
draws its batches from EL over an exported lineage pool, every rollout is a live trial (EnvevoBashEnv), and the
trials' rewards feed EL back (B = num_generations, τ = 0.75 as in the paper). Two lineages: `easy`, whose tasks'
verifiers pass an untouched sandbox, and `hard`, whose do not (the tiny model makes no tool call, so the trials
decide). EL must move `easy` on and hold `hard` at generation 0; the per-step log (RUN/training/grpo.jsonl, shown
by `envevo report RUN`) says which lineage and generation every group came from."""

from __future__ import annotations

import json
import os
import time

import pytest

pytest.importorskip("trl", reason="install the rl extra: pip install -e '.[rl]'")

from datasets import Dataset  # noqa: E402

from envevo.trainers._base import read_export_index  # noqa: E402
from envevo.trainers._steplog import TRAINING_LOG_DIR  # noqa: E402
from envevo.trainers.trl import EnvevoGRPOTrainer  # noqa: E402
from tests.trainers._trainer_support import tiny_gpt2  # noqa: E402

EASY = "RUN echo hello > /app/out.txt\n"  # the verifier's file is there before the agent starts


def _export(tmp_path):
    """Two lineages of two generations each, from real (tiny) Harbor tasks."""
    from envevo.schedule import export_rl
    from envevo.store import LineageStore
    from tests.store.test_store_support import difficulty_of, tiny_task, trace_of

    with LineageStore.open(tmp_path / "run") as store:
        for name, env in (("easy", EASY), ("hard", "")):
            lid = store.create_lineage(name, tiny_task(name, f"{name}: write hello to /app/out.txt.", env=env),
                                       trace=trace_of(1), difficulty=difficulty_of(1))
            store.commit_generation(lid, 1, tiny_task(name, f"{name}: write hello to /app/out.txt, then stop.", env=env),
                                    direction="length", effort="low", trace=trace_of(2), difficulty=difficulty_of(2),
                                    verified=True)
        export_rl(store, tmp_path / "rl")
    return tmp_path / "rl", tmp_path / "run"


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_el_in_a_real_grpo_loop_moves_passing_lineages_on_and_holds_failing_ones(tmp_path):
    from trl import GRPOConfig
    from trl.chat_template_utils import qwen3_chat_template

    from envevo.trainers.trl import bash_environment

    if not os.environ.get("ENVEVO_RUNTIME_PYTHON"):
        pytest.skip("`make test` runs this with ENVEVO_RUNTIME_PYTHON, envevo's own venv (Harbor is not in this one)")
    export, run = _export(tmp_path)
    rows = read_export_index(export)  # each task dir checked against its export hash
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": ""}], **r} for r in rows])
    model, tok = tiny_gpt2(["a", "b"], positions=1024)
    tok.chat_template = qwen3_chat_template
    log = run / TRAINING_LOG_DIR / "grpo.jsonl"
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=4, max_steps=2, report_to=[], use_cpu=True, logging_steps=1,
                      save_strategy="no", seed=0, dataloader_num_workers=0)
    trainer = EnvevoGRPOTrainer(model=model, processing_class=tok, args=args, train_dataset=ds,
                                environment_factory=bash_environment("podman"), scheduler="el",
                                scheduler_options={"tau": 0.75}, step_log=log)
    start = time.monotonic()
    trainer.train()
    wall = time.monotonic() - start
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    print(f"\nGRPO + EL + live trials: {len(steps)} steps in {wall:.0f}s")
    for s in steps:
        print(json.dumps({"step": s["step"], "groups": [(g["env_id"], g["rewards"], g["advanced"]) for g in s["groups"]],
                          "frontiers": s["scheduler"]["lineages"]}))
    assert len(steps) == 2 and all(len(s["groups"]) == 2 for s in steps)
    groups = [g for s in steps for g in s["groups"]]
    # the rewards are the trials': every easy rollout passed, no hard one did
    assert all(g["rewards"] == [1.0, 1.0] for g in groups if g["lineage"] == "easy")
    assert all(g["rewards"] == [0.0, 0.0] and not g["advanced"] for g in groups if g["lineage"] == "hard")
    assert steps[0]["groups"][0]["generation"] == 0 == steps[0]["groups"][1]["generation"]  # EL starts at generation 0
    assert any(g["advanced"] for g in groups if g["env_id"] == "easy__g00")
    final = steps[-1]["scheduler"]
    assert final["lineages"]["easy"] == 1 and final["lineages"]["hard"] == 0  # easy moved on, hard is held
    assert final["tau"] == 0.75 and final["group_size"] == 2
    assert not any(g["lineage"] == "hard" and g["generation"] == 1 for g in groups)  # never served past its frontier
