"""TRL's environment interface on envevo's runtime (EnvevoBashEnv): each rollout is a real trial verified with the
task's own verifier mode, so the hacks that TRL's own HarborEnv lets through (a shimmed tool, a forged reward) score
0, while the reference solution scores 1. The commands are sent as TRL's tool loop sends a model's tool calls."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest

from envevo.trainers._live_client import LiveTrialClient, LiveTrialFailed
from envevo.trainers.trl import EnvevoBashEnv, bash_environment, env_reward, lost_under_trl_harbor_env
from tests.conftest import ROOT

SEPARATE = ROOT / "tests" / "fixtures" / "realistic" / "separate-verifier"
C_BUILD = ROOT / "examples" / "seeds" / "c-build-fix"
# Shadows the `tr` the test runs: in a shared container it prints the expected answer whatever the file holds.
TR_SHIM = ("printf '#!/bin/sh\\necho 2 3 5 7 11 13 17 19 23 29 31 37 41 43 47 53 59 61 67 71 73 79 83 89 97\\n' "
           "> /usr/local/bin/tr && chmod +x /usr/local/bin/tr && touch /app/primes.txt")
FORGE = "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > /logs/verifier/reward.json"
PYTHON3_SHIM = "printf '#!/bin/sh\\nexit 0\\n' > /usr/bin/python3 && chmod +x /usr/bin/python3"


def _solution(task: Path) -> str:
    return "bash <<'ENVEVO_SOLVE'\n" + (task / "solution" / "solve.sh").read_text() + "\nENVEVO_SOLVE"


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _rollout(env: EnvevoBashEnv, task: Path, *commands: str) -> float | None:
    prompt = env.reset(task_dir=str(task), env_id=task.name)
    assert (task / "instruction.md").read_text() in prompt and "`bash`" in prompt
    for command in commands:
        env.bash(command)
    return env.get_reward()


@pytest.mark.sandbox
@pytest.mark.timeout(900)
def test_every_rollout_is_verified_by_the_tasks_own_verifier_and_hacks_score_zero():
    before = _tree_hash(SEPARATE)
    env = bash_environment("podman")()
    assert _rollout(env, SEPARATE, _solution(SEPARATE)) == 1.0
    assert env.outcome is not None and env.outcome.error_kind.value == "ok"
    assert _rollout(env, SEPARATE) == 0.0  # nop
    assert _rollout(env, SEPARATE, TR_SHIM) == 0.0  # the separate verifier has its own tr
    assert _rollout(env, SEPARATE, FORGE) == 0.0  # the reward is written by the verifier's test alone
    assert env.outcome is not None and env.outcome.turns == 1
    assert _tree_hash(SEPARATE) == before  # no trial changed the task on the host


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_control_the_tool_shim_passes_a_verifier_that_shares_the_agents_container(tmp_path):
    """What TRL's own HarborEnv does to every task (its tests run in the agent's container), done to a copy: the
    shim that scores 0 above scores 1, so the test above proves the runner, not a weak hack."""
    shared = tmp_path / "shared-verifier"
    shutil.copytree(SEPARATE, shared)
    toml = (shared / "task.toml").read_text()
    (shared / "task.toml").write_text(toml.replace('environment_mode = "separate"', "")
                                      .replace('artifacts = ["/app/primes.txt"]', ""))
    (shared / "tests" / "Dockerfile").unlink()
    assert _rollout(EnvevoBashEnv("podman"), shared, TR_SHIM) == 1.0


@pytest.mark.sandbox
@pytest.mark.timeout(1200)
def test_a_python3_shim_scores_zero_on_a_hardened_seed_and_the_state_persists_between_tool_calls():
    env = EnvevoBashEnv("podman")
    assert _rollout(env, C_BUILD, PYTHON3_SHIM) == 0.0
    env.reset(task_dir=str(C_BUILD))
    assert env.bash("echo hi > /tmp/mark") == "(no output, exit code 0)"
    assert env.bash("cat /tmp/mark").strip() == "hi"  # one sandbox for the whole rollout
    assert env_reward(environments=[env]) == [0.0]


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_a_new_rollout_drops_the_unscored_one_and_a_slow_command_times_out():
    env = EnvevoBashEnv("podman", timeout_sec=2)
    env.reset(task_dir=str(SEPARATE))
    first = env._trial
    env.reset(task_dir=str(SEPARATE))  # the first rollout's reward was never read: cancelled, no verdict
    assert first != env._trial
    assert env.bash("sleep 30").endswith("(timed out after 2s)")
    client = env._client
    assert client is not None
    with pytest.raises(LiveTrialFailed, match="no live trial"):
        client.exec(first, "true")
    assert env.get_reward() == 0.0


def test_unreset_environment_and_bad_rows_say_what_is_wrong(tmp_path):
    env = EnvevoBashEnv()
    assert env.bash("ls") == "(no task: the environment was not reset)"
    assert env.get_reward() is None
    with pytest.raises(ValueError, match="task_dir"):
        env.reset()
    with pytest.raises(ValueError, match="not a Harbor task dir"):
        env.reset(task_dir=str(tmp_path))
    assert env_reward(environment_reward=[1, None]) == [1.0, None]


def test_a_runtime_interpreter_without_envevo_fails_in_one_line(tmp_path):
    bare = tmp_path / "python"
    bare.write_text("#!/bin/sh\nexit 3\n")
    bare.chmod(0o755)
    with pytest.raises(LiveTrialFailed, match="ENVEVO_RUNTIME_PYTHON"):
        LiveTrialClient(python=bare, start_timeout_sec=30)
    client = LiveTrialClient(python=sys.executable)
    try:
        with pytest.raises(LiveTrialFailed, match="not a Harbor task dir"):
            client.start(tmp_path)
    finally:
        client.close()


def test_what_trl_harbor_env_would_drop_is_named_per_task():
    realistic = ROOT / "tests" / "fixtures" / "realistic"
    lost = lost_under_trl_harbor_env([SEPARATE, C_BUILD, realistic / "plain-name", realistic / "uv-copy"])
    assert lost["separate-verifier"] == ["separate verifier", "artifacts / collect hooks", "no-network"]
    assert "separate verifier" in lost["c-build-fix"]
    assert lost["uv-copy"] == ["no-network"]  # an older schema's allow_internet = false
    assert lost["plain-name"] == ["no-network"]


def test_a_verifier_environment_table_alone_declares_a_separate_verifier(tmp_path):
    task = tmp_path / "implied"
    shutil.copytree(SEPARATE, task)
    toml = (task / "task.toml").read_text().replace('environment_mode = "separate"\n', "")
    (task / "task.toml").write_text(toml + '\n[verifier.environment]\ndocker_image = "debian:bookworm-slim"\n')
    assert "separate verifier" in lost_under_trl_harbor_env([task])["implied"]


TRAINER = """
import sys
from envevo.trainers._live_client import LiveTrialClient
client = LiveTrialClient()
trial = client.start(sys.argv[1], "podman")
client.exec(trial, "true")                      # the sandbox is up
print(client._proc.pid, flush=True)             # the worker, whose pid labels the sandbox
import time; time.sleep(3600)                   # mid-rollout: the reward is never asked for
"""


@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_a_trainer_killed_mid_rollout_leaves_no_sandbox(tmp_path):
    import os
    import signal
    import subprocess
    import time

    from envevo.runtime import list_containers, owner_id

    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, str(SEPARATE)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert trainer.stdout is not None
        worker = int(trainer.stdout.readline())
        assert list_containers("podman", owner_id(worker))
        os.kill(trainer.pid, signal.SIGKILL)  # no atexit, no finally: only the worker's end of stdin is left
        start = time.monotonic()
        while list_containers("podman", owner_id(worker)):
            assert time.monotonic() - start < 60, "the killed trainer's sandbox outlived it"
            time.sleep(2)
    finally:
        trainer.kill()
        trainer.wait()
