"""Trainer adapters: an envevo scheduler driving verl, SkyRL, prime-rl (verifiers) and TRL.

Each adapter lives in its own module and imports its framework there, so importing this package costs
nothing; install the frameworks with the ``rl`` extra (``pip install 'envevo[rl]'``; SkyRL: the ``skyrl`` extra):

- :mod:`envevo.schedule.adapters.prime_rl`: ``EnvevoTaskSampler``, prime-rl's ``TaskSampler`` protocol;
- :mod:`envevo.schedule.adapters.skyrl`: ``EnvevoHarborDataset`` + ``EnvevoGenerator`` (SkyRL 0.4, Harbor generator);
- :mod:`envevo.schedule.adapters.trl`: ``EnvevoGRPOTrainer`` / ``SchedulerRepeatSampler`` / ``harbor_train_dataset``;
- :mod:`envevo.schedule.adapters.trl_env`: ``EnvevoBashEnv``, TRL's environment on live trials (no TRL import);
- :mod:`envevo.schedule.adapters.verl`: ``EnvevoRLHFDataset`` + ``EnvevoReplayBuffer`` (verl 0.9 v1 trainer).

``docs/trainers.md`` has a config snippet per trainer.
"""

from envevo.schedule.adapters._common import build_scheduler, lineages_from_rows, observe_groups

__all__ = ["build_scheduler", "lineages_from_rows", "observe_groups"]
