"""The exact expectation of the simulated agents (SIMULATION): the formula against the process it describes, the
calibration targets, and the order strong ≥ medium ≥ weak on the seeds and on evolved lineages."""

from __future__ import annotations

import asyncio
import random

import pytest

from envevo.catalog import CatalogPrior, build_blocks, random_chain
from envevo.evolve.engines.procedural import mutate
from envevo.rollout import (
    CALIBRATION_SEEDS,
    CALIBRATION_TARGETS,
    PROFILES,
    binomial_interval,
    calibrated_scale,
    caught_facts,
    expected,
    harmless_facts,
    play,
)
from envevo.rollout._episode import PRELUDE, shell

PRIOR = CatalogPrior()
ORDER = ("sim-strong", "sim-medium", "sim-weak")


def _episodes(chain, prof, n: int, wrong_caught: set[int]):
    """n episodes against a fake shell: a wrong attempt at a step in `wrong_caught` fails its self-check."""
    blocks = build_blocks(chain)
    wrong_cmds = {shell(PRELUDE + "(\n" + b.wrong_sh + "\n)\n"): t for t, b in enumerate(blocks)}

    async def run(batch: list[str]):
        out, failed = [], False
        for cmd in batch:
            if cmd in wrong_cmds:
                failed = wrong_cmds[cmd] in wrong_caught
            out.append((1 if failed and cmd.startswith("test -s") else 0, ""))
        return out

    async def all_():
        rng = random.Random(20261201)
        return [await play(chain, blocks, prof, PRIOR, rng, run) for _ in range(n)]

    return asyncio.run(all_())


@pytest.mark.parametrize("agent,caught", [("sim-weak", set()), ("sim-medium", {1})])
def test_exact_expectation_is_the_simulated_process(agent: str, caught: set[int]) -> None:
    chain = random_chain(None, 3, 11)
    prof = PROFILES[agent]
    eps = _episodes(chain, prof, 4000, caught)
    passed = [all(s.attempts[-1] == "oracle" for s in ep.steps) for ep in eps]
    facts = caught_facts(eps)
    assert facts == {t: t in caught for t in range(3)}  # every wrong variant was tried; the caught one seen
    exact = expected(chain, prof, PRIOR, facts)
    rate = sum(passed) / len(passed)
    se = (exact.pass_rate * (1 - exact.pass_rate) / len(eps)) ** 0.5
    assert abs(rate - exact.pass_rate) < 4 * se
    turns = [ep.turns for ep in eps]
    mean = sum(turns) / len(turns)
    sd = (sum((t - mean) ** 2 for t in turns) / len(turns)) ** 0.5
    assert abs(mean - exact.turns) < 4 * sd / len(turns) ** 0.5
    # a caught wrong variant is always retried: it raises that step's chance over the uncaught one's
    if caught:
        assert exact.steps[1].p_right > expected(chain, prof, PRIOR).steps[1].p_right


def test_a_harmless_wrong_variant_is_seen_in_passing_episodes_and_counted_right() -> None:
    """A wrong variant that gives the right output on the version's data: the step ends right whatever the attempts."""
    chain = random_chain(None, 3, 11)
    prof = PROFILES["sim-weak"]
    eps = _episodes(chain, prof, 4000, set())
    for ep in eps:  # the verifier's verdict when step 0's wrong variant is harmless
        ep.passed = all(s.attempts[-1] == "oracle" for s in ep.steps[1:])
    assert harmless_facts(eps) == {0}
    exact = expected(chain, prof, PRIOR, caught_facts(eps), harmless_facts(eps))
    assert exact.steps[0].p_right == 1.0
    assert exact.pass_rate == pytest.approx(exact.steps[1].p_right * exact.steps[2].p_right)
    rate = sum(ep.passed for ep in eps) / len(eps)
    assert abs(rate - exact.pass_rate) < 4 * (exact.pass_rate * (1 - exact.pass_rate) / len(eps)) ** 0.5
    assert exact.pass_rate > expected(chain, prof, PRIOR).pass_rate


def test_calibration_targets_hold_with_the_documented_constants() -> None:
    chains = [random_chain(None, 3, s) for s in CALIBRATION_SEEDS]
    mean = {a: sum(expected(c, PROFILES[a], PRIOR).pass_rate for c in chains) / len(chains) for a in ORDER}
    assert mean["sim-strong"] >= CALIBRATION_TARGETS["sim-strong"]
    for a in ("sim-medium", "sim-weak"):
        assert mean[a] == pytest.approx(CALIBRATION_TARGETS[a], abs=0.01)
        assert PROFILES[a].skill_scale == pytest.approx(
            calibrated_scale(PROFILES[a], CALIBRATION_TARGETS[a], chains, PRIOR), rel=0.02)


def _lineage(seed: int, effort: str, generations: int):
    rng, chain = random.Random(seed), random_chain(None, 3, seed)
    out = [chain]
    for _ in range(generations):
        dirs = ["length", "scenario", "skill"]
        rng.shuffle(dirs)
        new = next((n for d in dirs if (n := mutate(chain, d, effort, rng, PRIOR)) is not None), None)
        if new is None:
            break
        out.append(new)
        chain = new
    return out


def test_profiles_are_ordered_in_expectation_on_every_version() -> None:
    versions = [random_chain(None, 3, s) for s in CALIBRATION_SEEDS]
    for seed, effort in ((11, "high"), (12, "max"), (13, "low")):
        versions += _lineage(seed, effort, 10)
    assert len(versions) > 35 and max(len(v.steps) for v in versions) > 6
    for chain in versions:
        rates = [expected(chain, PROFILES[a], PRIOR).pass_rate for a in ORDER]
        turns = [expected(chain, PROFILES[a], PRIOR).turns for a in ORDER]
        assert rates[0] >= rates[1] >= rates[2] > 0
        assert turns[0] <= turns[2]  # the weak profile looks around more and retries more often


def test_binomial_interval_holds_its_level() -> None:
    from math import comb

    for p, k in ((0.9, 8), (0.5, 12), (0.37, 30), (0.0, 5), (1.0, 5)):
        lo, hi = binomial_interval(p, k)
        mass = sum(comb(k, x) * p ** x * (1 - p) ** (k - x) for x in range(lo, hi + 1))
        assert mass >= 0.95 and 0 <= lo <= hi <= k
    assert binomial_interval(0.5, 100) == (40, 60)
