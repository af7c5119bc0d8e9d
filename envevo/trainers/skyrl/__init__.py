"""SkyRL 0.4: an envevo scheduler decides which Harbor tasks SkyRL rolls out.

- ``EnvevoHarborDataset`` + ``EnvevoGenerator`` (``EnvevoExpMixin`` wires both): the rollouts run in SkyRL's Harbor
  generator (its repository's ``examples/train_integrations/harbor``), a Harbor ``Trial`` per rollout;
- ``EnvevoLiveGenerator``: envevo's own generator, each rollout a live trial verified with the task's own verifier mode.

``EnvevoExpMixin`` checks the dataset's tasks against the runner its generator is (:data:`HARBOR_GENERATOR` or
:data:`LIVE_GENERATOR`).
"""

from envevo.trainers._lazy import lazy_names
from envevo.trainers._runner import LIVE_TRIAL, RunnerSpec, depends, yes
from envevo.trainers._runner import Capability as C

HARBOR_GENERATOR = RunnerSpec(
    "skyrl-harbor", "SkyRL 0.4 Harbor generator (a Harbor `Trial` per rollout)", "skyrl",
    {C.BUILDS_IMAGES: yes(), C.SEPARATE_VERIFIER: yes(), C.ARTIFACTS: yes(),
     C.NO_NETWORK: depends("as its environment"), C.PREBUILT_IMAGES: depends("as its environment")},
    tested="dataset rows only (issue 23)")
LIVE_GENERATOR = RunnerSpec(
    "skyrl-live", "SkyRL 0.4 + envevo's `EnvevoLiveGenerator` (a live trial per rollout)", "skyrl", LIVE_TRIAL,
    tested="SkyRL's generator contract on the `separate-verifier` fixture (separate verifier, artifacts, no-network): "
    "reference 1.0, nothing 0.0, `tr` shim 0.0; 3 trials, about 85 s on a loaded host "
    "(`tests/trainers/test_adapters_skyrl_live.py`)")
RUNNERS = (HARBOR_GENERATOR, LIVE_GENERATOR)

__getattr__ = lazy_names(__name__, {
    "EnvevoExpMixin": "_harbor", "EnvevoGenerator": "_harbor", "EnvevoHarborDataset": "_harbor",
    "group_rewards": "_harbor", "EnvevoLiveGenerator": "_live", "PROMPT_SUFFIX": "_live", "command_of": "_live",
})

__all__ = ["HARBOR_GENERATOR", "LIVE_GENERATOR", "PROMPT_SUFFIX", "RUNNERS", "EnvevoExpMixin",  # noqa: F822
           "EnvevoGenerator", "EnvevoHarborDataset", "EnvevoLiveGenerator", "command_of", "group_rewards"]
