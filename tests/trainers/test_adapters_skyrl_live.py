"""SkyRL 0.4 on envevo's own generator: SkyRL's generator contract (GeneratorInput in, GeneratorOutput out), each
rollout a live trial with the task's own verifier mode. The policy is a scripted stand-in for SkyRL's inference
engine client (no vLLM on CPU): it answers with the reference solution, with nothing, or with a tool shim."""

from __future__ import annotations

import asyncio
import os

import pytest

pytest.importorskip("skyrl", reason="install the skyrl extra: pip install -e '.[skyrl]'")

from skyrl.train.generators.base import GeneratorInput, TrajectoryID  # noqa: E402

from envevo.trainers.skyrl import EnvevoLiveGenerator, command_of  # noqa: E402
from tests.trainers._trainer_support import tiny_gpt2  # noqa: E402
from tests.trainers.test_trl_env import SEPARATE, TR_SHIM  # noqa: E402


class ScriptedEngine:
    """SkyRL's InferenceEngineClient surface the generator uses: ``await generate(input, model=)``, one reply a turn."""

    def __init__(self, tokenizer, replies):
        self.tokenizer, self.replies, self.inputs = tokenizer, list(replies), []

    async def generate(self, engine_input, model=None):
        self.inputs.append(engine_input)
        text = self.replies.pop(0) if self.replies else "done"
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return {"responses": [text], "response_ids": [ids], "stop_reasons": ["stop"], "response_logprobs": None}


def _fenced(command: str) -> str:
    return f"I will run:\n```bash\n{command}\n```"


def test_the_first_fenced_block_is_the_command():
    assert command_of("x\n```bash\nls /app\n```\n```bash\nrm -rf /\n```") == "ls /app"
    assert command_of("all done") is None and command_of("```bash\n\n```") is None


def test_the_documented_experiment_wires_the_live_generator_to_the_scheduler(tmp_path):
    from types import SimpleNamespace

    from envevo.trainers.skyrl import EnvevoGenerator, EnvevoHarborDataset
    from tests.trainers._trainer_support import rl_export, snippet

    ns: dict = {}
    exec(snippet("skyrl-live"), ns)  # noqa: S102 - our own docs
    exp = ns["EnvevoLiveExp"].__new__(ns["EnvevoLiveExp"])
    exp.train_dataset = EnvevoHarborDataset.from_export(rl_export(tmp_path, lineages=2, generations=1), group_size=2)
    _, tok = tiny_gpt2(["a"])
    gen = exp.get_generator(SimpleNamespace(generator=SimpleNamespace(max_turns=4)), tok, ScriptedEngine(tok, []))
    assert isinstance(gen, EnvevoGenerator) and isinstance(gen.inner, EnvevoLiveGenerator)
    assert gen.dataset is exp.train_dataset and gen.inner.max_turns == 4


@pytest.mark.sandbox
@pytest.mark.timeout(900)
def test_skyrl_generator_contract_on_live_trials_reference_one_nothing_zero_shim_zero():
    if not os.environ.get("ENVEVO_RUNTIME_PYTHON"):
        pytest.skip("`make test` runs this with ENVEVO_RUNTIME_PYTHON, envevo's own venv (Harbor is not in this one)")
    _, tok = tiny_gpt2(["a", "b"])
    solution = (SEPARATE / "solution" / "solve.sh").read_text()
    scripts = {"reference": [_fenced(f"bash <<'ENVEVO_SOLVE'\n{solution}\nENVEVO_SOLVE"), "done"],
               "nothing": ["done"], "shim": [_fenced(TR_SHIM), "done"]}
    rewards = {}
    for name, replies in scripts.items():
        engine = ScriptedEngine(tok, replies)
        gen = EnvevoLiveGenerator(engine, tok, env="podman", max_turns=3)
        batch = GeneratorInput(prompts=[[{"role": "user", "content": str(SEPARATE)}]], env_classes=["envevo"],
                               env_extras=[{"data_source": str(SEPARATE)}], sampling_params=None,
                               trajectory_ids=[TrajectoryID(f"{name}#1", 0)], batch_metadata=None)
        out = asyncio.run(gen.generate(batch))
        assert out["trajectory_ids"][0].instance_id == f"{name}#1" and out["stop_reasons"] == ["complete"]
        assert len(out["response_ids"][0]) == len(out["loss_masks"][0])
        if name != "nothing":  # the command's output is in the response, masked out of the loss
            assert 0 in out["loss_masks"][0] and 1 in out["loss_masks"][0]
        assert gen.outcomes[0] is not None and gen.outcomes[0].error_kind.value == "ok"
        rewards[name] = out["rewards"][0]
    assert rewards == {"reference": 1.0, "nothing": 0.0, "shim": 0.0}
