"""k rollouts per task, simulated skill-profile agents (SIMULATION), summaries (pass@k, turns), seed selection.

`envevo.rollout.agents:SimulatedDriver` drives the sandbox's shell for runtime's Harbor agent (SIM_AGENT, with
`sim_agent_kwargs`); envevo.rollout never imports Harbor.
"""

from envevo.rollout._episode import Episode, StepLog, play
from envevo.rollout._exact import (
                                  Expectation,
                                  StepExpectation,
                                  binomial_interval,
                                  caught_facts,
                                  expected,
                                  harmless_facts,
                                  read_episodes,
                                  step_outcome,
                                  task_expectation,
)
from envevo.rollout._pool import POOL_FILE, seed_pool
from envevo.rollout._profiles import (
                                      CALIBRATION_SEEDS,
                                      CALIBRATION_TARGETS,
                                      PROFILES,
                                      SimProfile,
                                      calibrated_scale,
                                      explore_turns,
                                      is_simulated,
                                      profile,
                                      step_probability,
)
from envevo.rollout._run import (
                                 SIM_AGENT,
                                 SIM_MODEL,
                                 Target,
                                 agent_label,
                                 check_agent,
                                 dir_targets,
                                 parse_agent_kwargs,
                                 pending,
                                 rollout,
                                 run_targets,
                                 sim_agent_kwargs,
)
from envevo.rollout._select import parse_fraction, rollout_reasons, select_seeds
from envevo.rollout._stats import RolloutSummary, pass_at_k, summarize
from envevo.rollout._target import run_reference, weakness_target
from envevo.rollout._weakness import WeaknessReport, WeaknessRow, step_outcomes, weakness

__all__ = [
    "CALIBRATION_SEEDS",
    "CALIBRATION_TARGETS",
    "Expectation",
    "StepExpectation",
    "binomial_interval",
    "calibrated_scale",
    "caught_facts",
    "expected",
    "harmless_facts",
    "read_episodes",
    "task_expectation",
    "step_outcome",
    "POOL_FILE",
    "PROFILES",
    "SIM_AGENT",
    "SIM_MODEL",
    "Episode",
    "RolloutSummary",
    "SimProfile",
    "StepLog",
    "Target",
    "agent_label",
    "check_agent",
    "dir_targets",
    "explore_turns",
    "is_simulated",
    "parse_agent_kwargs",
    "parse_fraction",
    "pass_at_k",
    "pending",
    "play",
    "profile",
    "rollout",
    "rollout_reasons",
    "seed_pool",
    "run_reference",
    "run_targets",
    "select_seeds",
    "sim_agent_kwargs",
    "step_probability",
    "summarize",
    "WeaknessReport",
    "WeaknessRow",
    "step_outcomes",
    "weakness",
    "weakness_target",
]
