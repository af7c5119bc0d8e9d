"""k rollouts per task, simulated skill-profile agents (SIMULATION), summaries (pass@k, turns), seed selection.

`envevo.rollout.agents:SimulatedAgent` is the Harbor custom agent; it is not imported here so that
importing envevo.rollout does not import Harbor.
"""

from envevo.rollout._episode import Episode, StepLog, play
from envevo.rollout._profiles import PROFILES, SimProfile, explore_turns, is_simulated, profile, step_probability
from envevo.rollout._run import SIM_AGENT, SIM_MODEL, Target, agent_label, dir_targets, pending, rollout, run_rollouts, run_targets
from envevo.rollout._stats import RolloutSummary, pass_at_k, summarize
from envevo.rollout._weakness import WeaknessReport, WeaknessRow, step_outcomes, weakness

__all__ = [
    "PROFILES",
    "SIM_AGENT",
    "SIM_MODEL",
    "Episode",
    "RolloutSummary",
    "SimProfile",
    "StepLog",
    "Target",
    "agent_label",
    "dir_targets",
    "explore_turns",
    "is_simulated",
    "pass_at_k",
    "pending",
    "play",
    "profile",
    "rollout",
    "run_rollouts",
    "run_targets",
    "step_probability",
    "summarize",
    "WeaknessReport",
    "WeaknessRow",
    "step_outcomes",
    "weakness",
]
