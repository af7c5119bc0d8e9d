"""TRL 1.16: GRPO on an envevo curriculum (``EnvevoGRPOTrainer``) and TRL's environment on envevo's live trials
(``EnvevoBashEnv``, ``bash_environment()``).

Two runners: :data:`BASH_ENV` (each rollout a live trial, verified with the task's own verifier mode) and TRL's own
``HarborEnv`` (:data:`HARBOR_ENV`), which runs the tests in the agent's container; ``EnvevoGRPOTrainer`` checks the
dataset's tasks against the one its ``environment_factory`` is. ``EnvevoBashEnv`` imports neither TRL nor Harbor.
"""

from envevo.trainers._lazy import lazy_names
from envevo.trainers._runner import Capability as C
from envevo.trainers._runner import RunnerSpec, depends, no, yes

BASH_ENV = RunnerSpec(
    "trl-envevo", "TRL 1.16 + envevo's `EnvevoBashEnv` (`bash_environment()`)", "trl",
    {C.BUILDS_IMAGES: yes(), C.SEPARATE_VERIFIER: yes("a live trial per rollout"), C.ARTIFACTS: yes(),
     C.NO_NETWORK: yes(), C.PREBUILT_IMAGES: yes("envevo's runtime")},
    tested="oracle 1.0, nop 0.0, tool shim 0.0, forged reward 0.0 (`tests/trainers/test_trl_env.py`)")
HARBOR_ENV = RunnerSpec(
    "trl-harbor", "TRL 1.16 `HarborEnv`", "trl",
    {C.BUILDS_IMAGES: yes(), C.SEPARATE_VERIFIER: no("tests run in the agent's container"), C.ARTIFACTS: no(),
     C.NO_NETWORK: no(), C.PREBUILT_IMAGES: depends("not run here")},
    tested="issue 23: a `python3` shim scores 1.0; refused by `EnvevoGRPOTrainer` for such tasks",
    remedy="use environment_factory=envevo.trainers.trl.bash_environment(), which verifies each rollout with the "
    "task's own verifier mode")
RUNNERS = (BASH_ENV, HARBOR_ENV)

__getattr__ = lazy_names(__name__, {
    "EnvevoGRPOTrainer": "_trainer", "SchedulerRepeatSampler": "_trainer", "harbor_train_dataset": "_trainer",
    "EnvevoBashEnv": "_env", "bash_environment": "_env", "env_reward": "_env", "lost_under_trl_harbor_env": "_env",
    "BASH_PROMPT_SUFFIX": "_env",
})

__all__ = ["BASH_ENV", "BASH_PROMPT_SUFFIX", "HARBOR_ENV", "RUNNERS", "EnvevoBashEnv",  # noqa: F822
           "EnvevoGRPOTrainer", "SchedulerRepeatSampler", "bash_environment", "env_reward", "harbor_train_dataset",
           "lost_under_trl_harbor_env"]
