"""verl 0.9: an envevo scheduler chooses every prompt verl's v1 trainer fetches, and sees every finished group
(``EnvevoRLHFDataset`` as ``data.custom_cls``, ``EnvevoReplayBuffer`` as ``trainer.v1.sampler.custom_sampler``, both
``pkg://envevo.trainers.verl``; docs/trainers.md has the config).

verl's rollouts run in the agent loop and reward function you configure, not in envevo, so this package declares no
runner of its own: name the one your agent loop uses as ``data.envevo.runner`` and the dataset checks every row's task
against it (``python -m envevo.trainers._table`` lists them).
"""

from envevo.trainers._lazy import lazy_names
from envevo.trainers._runner import RunnerSpec

RUNNERS: tuple[RunnerSpec, ...] = ()

__getattr__ = lazy_names(__name__, {
    "EnvevoRLHFDataset": "_adapter", "EnvevoReplayBuffer": "_adapter", "EnvevoReplayBufferAsync": "_adapter",
    "dataset_extra_infos": "_adapter",
})

__all__ = ["RUNNERS", "EnvevoRLHFDataset", "EnvevoReplayBuffer", "EnvevoReplayBufferAsync",  # noqa: F822
           "dataset_extra_infos"]
