"""The exact expectation against sampled rollouts in real sandboxes (SIMULATION), and the profiles' order there.

Two versions (a procedural seed, L=3, and its third high-effort descendant, L=7) × three profiles × k=8 rollouts:
48 trials, about two minutes on an idle machine. The rollouts are
seeded from the task hash, so the test is deterministic; `benchmarks/sim_exact_validation.py` is the long version.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from envevo.catalog import CatalogPrior
from envevo.evolve.engines.procedural import write_task
from envevo.rollout import (
    PROFILES,
    binomial_interval,
    caught_facts,
    dir_targets,
    expected,
    harmless_facts,
    read_episodes,
    rollout,
)
from tests.rollout.test_exact import ORDER, _lineage

K = 8


@pytest.mark.sandbox
@pytest.mark.timeout(1800)  # 48 trials: under a shared machine's load one trial took up to 25 s here
def test_sampled_pass_rates_fall_in_the_exact_interval_and_keep_the_order(sandbox: str, tmp_path: Path) -> None:
    lineage = _lineage(11, "high", 3)
    chains = [lineage[0], lineage[3]]
    dirs = [write_task(c, tmp_path / f"v{i}") for i, c in enumerate(chains)]
    targets = dir_targets(dirs)
    sampled = {}
    for agent in ORDER:
        for s in asyncio.run(rollout(targets, agent, None, K, trials_dir=tmp_path / "trials" / agent, concurrency=2,
                                     env=sandbox)):
            assert s.n == K and not s.errors, s
            sampled[(s.task_hash, agent)] = s
    prior = CatalogPrior()
    for t, chain in zip(targets, chains, strict=True):
        trial_dirs = [d for agent in ORDER for d in (tmp_path / "trials" / agent / t.task_hash[:12]).iterdir()]
        episodes = read_episodes(trial_dirs)  # one version's facts hold for every profile
        facts, harmless = caught_facts(episodes), harmless_facts(episodes)
        rates = []
        for agent in ORDER:
            exact = expected(chain, PROFILES[agent], prior, facts, harmless)
            s = sampled[(t.task_hash, agent)]
            lo, hi = binomial_interval(exact.pass_rate, K)
            assert lo <= s.passes <= hi, (t.name, agent, s.passes, exact.pass_rate)
            assert s.mean_turns == pytest.approx(exact.turns, rel=0.2), (t.name, agent)
            rates.append((s.pass_rate, exact.pass_rate))
        for (a, pa), (b, pb) in zip(rates, rates[1:], strict=False):  # strong ≥ medium ≥ weak, up to sampling noise
            se = ((pa * (1 - pa) + pb * (1 - pb)) / K) ** 0.5
            assert a >= b - 1.96 * se - 1e-9, (t.name, rates)


@pytest.mark.sandbox
def test_a_retry_starts_from_the_state_before_the_wrong_attempt(sandbox: str, tmp_path: Path) -> None:
    """A permission fix is not idempotent: its wrong variant (chmod -R) leaves nothing for the oracle to fix. Before
    the undo, the noticed retry printed no names, failed its self-check, and the episode failed (reward 0)."""
    import asyncio

    from envevo.catalog import random_chain
    from envevo.rollout import SIM_AGENT, sim_agent_kwargs
    from envevo.runtime import TrialSpec, run_trials
    from envevo.task import load_task

    path = write_task(random_chain(None, 3, 34), tmp_path / "task")
    chain = load_task(path).envevo_metadata["chain"]
    assert chain["steps"][0]["skill"] == "permission_repair"
    always_notices = {"name": "sim-undo", "skill_scale": 40, "scenario_scale": 60, "notice": 1.0, "retries": 2,
                      "explore": 0.5}
    spec = TrialSpec(task_dir=path, agent=SIM_AGENT, env=sandbox, trials_dir=tmp_path / "trials",
                     agent_kwargs=sim_agent_kwargs(chain, always_notices, 0, p_step=0.5))  # seed 0: wrong, then right
    (o,) = asyncio.run(run_trials([spec], concurrency=1))
    (episode,) = read_episodes([o.trial_dir])
    assert episode.steps[0].attempts == ["wrong", "oracle"] and episode.steps[0].self_check == [True, True]
    assert all(s.attempts[-1] == "oracle" for s in episode.steps)
    assert o.reward == 1.0, o.error_message
