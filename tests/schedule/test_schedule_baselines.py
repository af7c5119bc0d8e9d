"""Every scheduler behind the one interface (ids exist, deterministic, resumable, accounted), and what each
baseline is for: DAPO drops zero-variance groups, SFL prefers p ≈ 0.5, PLR replays high |advantage|,
pools follow prime-rl's easy/normal/hard rule, co-evolution stays on seeds and their skill-only variants."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envevo.schedule import (
    CoevoScheduler,
    DAPOScheduler,
    EnvRecord,
    PLRScheduler,
    PoolsScheduler,
    RandomScheduler,
    ScheduleError,
    SFLScheduler,
    make_scheduler,
    parse_spec,
    scheduler_names,
)
from envevo.trace import Step, Trace
from tests.schedule.test_schedule_support import Driver, actions, pool, rewards_of

fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
traced_pools = st.builds(lambda lengths: pool(lengths, traced=True),
                         st.lists(st.integers(1, 5), min_size=1, max_size=5))
ALL = ["el", "random", "plr", "sfl", "dapo", "pools", "coevo", "el+patience+frontier+beta"]


def test_registry_has_every_builtin_in_order():
    assert scheduler_names()[:7] == ["el", "random", "plr", "sfl", "dapo", "pools", "coevo"]
    with pytest.raises(ScheduleError, match="unknown scheduler 'nope'"):
        parse_spec("nope")
    with pytest.raises(ScheduleError, match="no extension 'patience'"):
        parse_spec("random+patience")


@fast
@given(traced_pools, actions, st.sampled_from(ALL), st.integers(0, 1000))
def test_ids_exist_decisions_are_deterministic_and_accounted(lineages, acts, spec, seed):
    a = make_scheduler(spec, lineages, seed=seed)
    b = make_scheduler(spec, lineages, seed=seed)
    la, lb = Driver(a).play(acts), Driver(b).play(acts)
    assert la == lb
    ids = set(a.env_ids)
    served = [e for entry in la if entry[0] == "next" for e in entry[1]]
    assert set(served) <= ids
    n_obs = sum(1 for e in la if e[0] == "obs")
    assert a.progress()["observed"] == n_obs
    assert a.progress()["served"] == len(served)
    assert sum(a.stats(e)["groups"] for e in ids) == n_obs


@fast
@given(traced_pools, actions, actions, st.sampled_from(ALL))
def test_state_dict_round_trip_mid_run(lineages, first, then, spec):
    a = make_scheduler(spec, lineages, seed=3)
    d = Driver(a)
    d.play(first)
    b = make_scheduler(spec, lineages, seed=3)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    la, lb = Driver(a), Driver(b)
    la.in_flight = list(d.in_flight)
    lb.in_flight = list(d.in_flight)
    assert la.play(then) == lb.play(then)
    assert a.state_dict() == b.state_dict()


def test_next_counts():
    for spec in ALL:
        s = make_scheduler(spec, pool([3, 2], traced=True))
        assert s.next(0) == []
        assert len(s.next(7)) == 7  # more groups than environments: ids repeat


# -------------------------------------------------------------------------------------------------- DAPO


def test_dapo_drops_zero_variance_groups_and_asks_for_refills():
    s = DAPOScheduler(pool([4, 4]))
    assert s.dynamic_sampling
    ids = s.next(3)
    assert s.observe(ids[0], rewards_of(8)).keep is False  # all pass
    assert s.observe(ids[1], rewards_of(0)).keep is False  # all fail
    assert s.observe(ids[2], rewards_of(3)).keep is True
    assert s.pending_refill == 2 and s.progress()["dropped"] == 2
    s.next(2)
    assert s.pending_refill == 0


def test_other_schedulers_keep_every_group():
    for spec in ["el", "random", "plr", "sfl", "pools", "coevo"]:
        s = make_scheduler(spec, pool([2], traced=True))
        assert s.observe(s.next(1)[0], rewards_of(8)).keep


# -------------------------------------------------------------------------------------------------- SFL


def _rated(sched, rates: dict[str, int]) -> None:
    for e, passes in rates.items():
        sched.observe(e, rewards_of(passes))


def test_sfl_prefers_pass_rates_near_one_half():
    lineages = pool([1] * 30)
    s = SFLScheduler(lineages, rho=1.0, buffer_frac=0.1, seed=0)
    rates = {f"L{k}__g00": [0, 8, 4][k % 3] for k in range(30)}  # ten each at p = 0, 1, 0.5
    _rated(s, rates)
    assert {s.env_ids[i] for i in s.buffer(3)} <= {e for e, p in rates.items() if p == 4}
    counts = Counter(rates[e] for _ in range(50) for e in s.next(3))
    assert counts[4] == 150 and counts[0] == counts[8] == 0
    # with the default mix, half the batch still comes from the whole pool
    mixed = SFLScheduler(lineages, seed=0)
    _rated(mixed, rates)
    c = Counter(rates[e] for _ in range(200) for e in mixed.next(4))
    assert c[4] > 3 * c[0] and c[4] > 3 * c[8]


def test_sfl_learnability_is_p_times_one_minus_p():
    s = SFLScheduler(pool([1, 1]), ema=1.0)
    s.observe("L0__g00", rewards_of(2))
    assert s.learnability().tolist() == [0.25 * 0.75, -1.0]


# -------------------------------------------------------------------------------------------------- PLR


def test_plr_serves_unseen_first_then_replays_high_advantage():
    s = PLRScheduler(pool([1] * 6), seed=1)
    first = s.next(6)
    assert sorted(first) == sorted(s.env_ids)  # nothing seen: each environment once
    for e in first:
        s.observe(e, rewards_of(4 if e == "L3__g00" else 8))
    seen, p = s.replay_distribution()
    assert s.env_ids[int(seen[np.argmax(p)])] == "L3__g00"
    c = Counter(s.next(200))
    assert c["L3__g00"] > 150


def test_plr_score_is_mean_absolute_advantage():
    s = PLRScheduler(pool([1]))
    s.observe("L0__g00", [1.0, 0.0, 0.0, 0.0])
    assert s._score[0] == pytest.approx((0.75 + 3 * 0.25) / 4)


# -------------------------------------------------------------------------------------------------- pools


def test_pools_classify_by_mean_reward_and_sample_by_fraction():
    s = PoolsScheduler(pool([1] * 20), easy_fraction=0.25, hard_fraction=0.25, seed=0)
    for k in range(20):
        s.observe(f"L{k}__g00", rewards_of([8, 0, 4, 4][k % 4]))
    assert s.pool_of("L0__g00") == "easy" and s.pool_of("L1__g00") == "hard" and s.pool_of("L2__g00") == "normal"
    batch = s.next(8)
    kinds = Counter(s.pool_of(e) for e in batch)
    assert kinds == {"easy": 2, "hard": 2, "normal": 4}
    assert len(set(batch)) == 8


def test_pools_fill_shortfalls_from_normal():
    s = PoolsScheduler(pool([1] * 4), easy_fraction=0.5, hard_fraction=0.0)
    assert Counter(s.pool_of(e) for e in s.next(4)) == {"normal": 4}  # nothing is easy yet


# -------------------------------------------------------------------------------------------------- co-evolution


def _trace(pairs):
    return Trace(goal="g", steps=tuple(Step(scenario=a, skill=b) for a, b in pairs))


def _coevo_pool():
    seed = [("db", "sql"), ("logs", "grep")]
    lin = [
        EnvRecord(id="A__g00", lineage="A", generation=0, trace=_trace(seed)),
        EnvRecord(id="A__g01", lineage="A", generation=1, trace=_trace([("db", "join"), ("logs", "grep")])),
        EnvRecord(id="A__g02", lineage="A", generation=2, trace=_trace([("db", "sql"), ("logs", "awk")])),
        EnvRecord(id="A__g03", lineage="A", generation=3, trace=_trace([("csv", "join"), ("logs", "awk")])),
        EnvRecord(id="A__g04", lineage="A", generation=4, trace=_trace([("db", "join"), ("logs", "awk"), ("x", "y")])),
    ]
    other = [EnvRecord(id="B__g00", lineage="B", generation=0, trace=_trace([("tar", "gzip")])),
             EnvRecord(id="B__g01", lineage="B", generation=1, trace=_trace([("zip", "gzip")]))]
    return [lin, other]


def test_coevo_draws_only_seeds_and_skill_only_variants():
    s = CoevoScheduler(_coevo_pool(), seed=0)
    assert sorted(s.eligible) == ["A__g00", "A__g01", "A__g02", "B__g00"]
    assert set(s.next(500)) == {"A__g00", "A__g01", "A__g02", "B__g00"}
    assert s.notes == []


def test_coevo_targets_weak_skills():
    s = CoevoScheduler(_coevo_pool(), seed=0)
    for _ in range(3):
        s.observe("A__g01", rewards_of(8))  # 'join' is fine …
        s.observe("A__g02", rewards_of(0))  # … 'awk' fails
    assert s.weakness()["awk"] > s.weakness()["join"]
    c = Counter(e for e in s.next(400) if e in {"A__g01", "A__g02"})
    assert c["A__g02"] > 3 * c["A__g01"]


def test_coevo_without_variants_serves_seeds_and_says_so():
    s = CoevoScheduler(pool([3, 2]), seed=0)  # untraced: no variant can be recognised
    assert set(s.next(100)) == {"L0__g00", "L1__g00"}
    assert s.notes and "seeds only" in s.notes[0]


# -------------------------------------------------------------------------------------------------- random


def test_random_batches_are_distinct_and_cover_the_pool():
    s = RandomScheduler(pool([5, 5]), seed=0)
    b = s.next(10)
    assert sorted(b) == sorted(s.env_ids)
    assert len(set(s.next(4))) == 4
