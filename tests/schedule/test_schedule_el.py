"""The EL scheduler: the paper's rule (generation order, advance at > τ·B passes), its invariants under
asynchronous trainers, and the three opt-in extensions."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envevo.schedule import BetaAdvance, ELScheduler, ScheduleError
from tests.schedule.test_schedule_support import Driver, actions, pool, pools, rewards_of

fast = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
taus = st.sampled_from([0.5, 0.625, 0.75, 0.875])


def _gen(env_id: str) -> tuple[str, int]:
    lin, g = env_id.split("__g")
    return lin, int(g)


@fast
@given(pools, actions, taus, st.integers(0, 100))
def test_never_serves_a_later_generation_before_the_earlier_ones_pass(lineages, acts, tau, seed):
    """Extensions off: every served environment's predecessors in its lineage have passed, and all served
    environments are from the lowest generation that still has a pending environment (one linear order)."""
    sched = ELScheduler(lineages, tau=tau, seed=seed)
    ids = set(sched.env_ids)

    def check(s, n):
        finished = s.progress()["finished"]
        pending = [e for e in s.env_ids if s.status_of(e) == "pending"]
        level = min((_gen(e)[1] for e in pending), default=None)
        window = s.window()
        for e in window:
            assert e in ids
            lin, g = _gen(e)
            earlier = [x for x in s.env_ids if _gen(x)[0] == lin and _gen(x)[1] < g]
            assert all(s.status_of(x) == "passed" for x in earlier)
            if not finished:
                assert s.status_of(e) == "pending"
                assert g == level
        assert finished == (not pending)

    log = Driver(sched, on_next=check).play(acts)
    for entry in log:
        if entry[0] == "next":
            assert set(entry[1]) <= ids


@fast
@given(pools, actions, taus, st.sampled_from([4, 8]))
def test_advances_exactly_when_passes_exceed_tau_times_b(lineages, acts, tau, group):
    sched = ELScheduler(lineages, group_size=group, tau=tau)
    log = Driver(sched, group=group, on_obs=lambda s, e: s.status_of(e)).play(acts)
    for entry in log:
        if entry[0] != "obs":
            continue
        obs, before = entry[1], entry[2]
        should = before == "pending" and obs["passes"] > tau * group
        assert obs["advanced"] == should
        assert obs["late"] == (before != "pending")
        after = sched.status_of(obs["env_id"])
        if should:
            assert after == "passed"


@fast
@given(pools, actions, st.integers(0, 10_000), st.sampled_from(["el", "el+patience", "el+frontier", "el+beta"]))
def test_same_seed_same_decisions(lineages, acts, seed, spec):
    from envevo.schedule import make_scheduler

    a = Driver(make_scheduler(spec, lineages, seed=seed)).play(acts)
    b = Driver(make_scheduler(spec, lineages, seed=seed)).play(acts)
    assert a == b


@fast
@given(pools, actions, actions, st.sampled_from(["el", "el+patience", "el+frontier", "el+beta"]))
def test_state_dict_round_trip_mid_run_gives_identical_futures(lineages, first, then, spec):
    from envevo.schedule import make_scheduler

    a = make_scheduler(spec, lineages, seed=7)
    da = Driver(a)
    da.play(first)
    state = json.loads(json.dumps(a.state_dict()))  # JSON-able, as a trainer checkpoint would store it
    b = make_scheduler(spec, lineages, seed=7)
    b.load_state_dict(state)
    la, lb = Driver(a), Driver(b)
    la.in_flight = list(da.in_flight)
    lb.in_flight = list(da.in_flight)  # groups in flight at the checkpoint come back after the restart
    assert la.play(then) == lb.play(then)
    assert a.progress() == b.progress()


@fast
@given(pools, actions)
def test_every_observation_is_accounted_even_late_ones(lineages, acts):
    sched = ELScheduler(lineages)
    log = Driver(sched).play(acts)
    obs = [e[1] for e in log if e[0] == "obs"]
    served = sum(len(e[1]) for e in log if e[0] == "next")
    p = sched.progress()
    assert p["observed"] == len(obs)
    assert p["served"] == served
    assert p["late"] == sum(o["late"] for o in obs)
    assert sum(sched.stats(e)["groups"] for e in sched.env_ids) == len(obs)
    assert sum(sched.stats(e)["rollouts"] for e in sched.env_ids) == 8 * len(obs)
    assert sum(sched.stats(e)["in_flight"] for e in sched.env_ids) == served - len(obs)
    for o in obs:
        if o["late"]:
            assert sched.stats(o["env_id"])["late_groups"] >= 1


def test_late_group_after_an_advance_updates_stats_and_is_reported():
    sched = ELScheduler(pool([2]))
    a, b = sched.next(2)
    assert a == b == "L0__g00"  # one environment in the window fills both groups
    first = sched.observe(a, rewards_of(8))
    assert first.advanced and not first.late
    assert sched.window() == ["L0__g01"]
    late = sched.observe(b, rewards_of(2))
    assert late.late and not late.advanced and late.solicited
    st_ = sched.stats("L0__g00")
    assert st_["groups"] == 2 and st_["passes"] == 10 and st_["in_flight"] == 0 and st_["late_groups"] == 1
    assert sched.progress()["late"] == 1
    assert sched.status_of("L0__g00") == "passed"  # a late failure does not undo the advance


def test_generation_order_and_lock_step():
    sched = ELScheduler(pool([3, 3]), seed=0)
    assert {e for e in sched.next(4)} == {"L0__g00", "L1__g00"}
    sched.observe("L0__g00", rewards_of(7))
    # L0 passed generation 0, but generation 1 waits until every generation-0 environment has passed
    assert sched.window() == ["L1__g00"]
    sched.observe("L1__g00", rewards_of(6))  # 6/8 is not more than τ = 6/8
    assert sched.window() == ["L1__g00"]
    sched.observe("L1__g00", rewards_of(7))
    assert set(sched.window()) == {"L0__g01", "L1__g01"}


def test_exhausted_pool_keeps_serving_the_final_generation():
    sched = ELScheduler(pool([2, 1]))
    for e in ["L0__g00", "L1__g00", "L0__g01"]:
        sched.observe(e, rewards_of(8))
    p = sched.progress()
    assert p["finished"] and p["pending"] == 0
    assert set(sched.next(4)) == {"L0__g01", "L1__g00"}


def test_difficulty_order_within_a_generation():
    lineages = pool([1, 1, 1])
    # D_T of L<k>__g00 is k: reverse it
    lineages = [[r.model_copy(update={"D_T": -float(k)})] for k, (r,) in enumerate(lineages)]
    sched = ELScheduler(lineages, order="difficulty")
    assert sched.window() == ["L2__g00", "L1__g00", "L0__g00"]
    assert sched.next(2) == ["L2__g00", "L1__g00"]


# ------------------------------------------------------------------------------------------ extensions


def test_patience_defers_a_stuck_environment_and_unblocks_its_lineage():
    sched = ELScheduler(pool([3]), patience=3)
    for _ in range(2):
        assert not sched.observe("L0__g00", rewards_of(0)).deferred
    assert sched.observe("L0__g00", rewards_of(0)).deferred
    assert sched.status_of("L0__g00") == "deferred"
    assert sched.window() == ["L0__g01"]
    sched.observe("L0__g01", rewards_of(8))
    sched.observe("L0__g02", rewards_of(8))
    # nothing else left: the deferred environment comes back with fresh patience
    assert sched.window() == ["L0__g00"] and sched.progress()["revisits"] == 1
    assert sched.observe("L0__g00", rewards_of(7)).advanced
    assert sched.progress()["finished"]


def test_patience_counts_consecutive_zero_groups_only():
    sched = ELScheduler(pool([2]), patience=2)
    sched.observe("L0__g00", rewards_of(0))
    sched.observe("L0__g00", rewards_of(1))
    assert not sched.observe("L0__g00", rewards_of(0)).deferred
    assert sched.observe("L0__g00", rewards_of(0)).deferred


def test_without_patience_a_stuck_environment_blocks_forever():
    sched = ELScheduler(pool([3]))
    for _ in range(50):
        sched.observe("L0__g00", rewards_of(0))
    assert sched.window() == ["L0__g00"]


def test_late_pass_of_a_deferred_environment_marks_it_passed():
    sched = ELScheduler(pool([2]), patience=1)
    a, b = sched.next(2)
    assert sched.observe(a, rewards_of(0)).deferred
    late = sched.observe(b, rewards_of(8))
    assert late.late and late.advanced
    assert sched.status_of("L0__g00") == "passed"


def test_frontier_advances_each_lineage_independently():
    lock = ELScheduler(pool([3, 3]))
    free = ELScheduler(pool([3, 3]), frontier=True)
    for s in (lock, free):
        s.observe("L0__g00", rewards_of(8))
    assert lock.window() == ["L1__g00"]
    assert free.window() == ["L1__g00", "L0__g01"]  # the lineage that is behind comes first
    free.observe("L0__g01", rewards_of(8))
    assert free.window() == ["L1__g00", "L0__g02"]


def test_beta_advances_on_a_partial_group_that_the_paper_rule_cannot():
    base = ELScheduler(pool([2]))
    beta = ELScheduler(pool([2]), beta=BetaAdvance())
    assert not base.observe("L0__g00", [1.0] * 4).advanced  # 4 passes are not > 6 of B = 8
    assert beta.observe("L0__g00", [1.0] * 4).advanced  # P(p > 0.75 | Beta(5, 1)) = 0.76 ≥ 0.65


def test_beta_discounts_a_lucky_group_after_failures():
    base = ELScheduler(pool([2]))
    beta = ELScheduler(pool([2]), beta=BetaAdvance())
    for s in (base, beta):
        for _ in range(3):
            s.observe("L0__g00", rewards_of(0))
    assert base.observe("L0__g00", rewards_of(7)).advanced
    assert not beta.observe("L0__g00", rewards_of(7)).advanced
    assert not beta.observe("L0__g00", rewards_of(8)).advanced
    assert beta.observe("L0__g00", rewards_of(8)).advanced  # old failures fade as new passes accumulate


def test_beta_needs_min_rollouts():
    s = ELScheduler(pool([2]), beta=BetaAdvance(min_rollouts=6, confidence=0.5))
    assert not s.observe("L0__g00", [1.0] * 5).advanced
    assert s.observe("L0__g00", [1.0]).advanced


# ------------------------------------------------------------------------------------------ input errors


def test_bad_input_is_a_schedule_error():
    s = ELScheduler(pool([2]))
    with pytest.raises(ScheduleError, match="unknown environment id"):
        s.observe("nope", rewards_of(8))
    with pytest.raises(ScheduleError, match="no rewards"):
        s.observe("L0__g00", [])
    with pytest.raises(ScheduleError, match="finite"):
        s.observe("L0__g00", [float("nan")])
    with pytest.raises(ScheduleError):
        s.next(-1)
    with pytest.raises(ScheduleError, match="tau"):
        ELScheduler(pool([1]), tau=1.0)
    with pytest.raises(ScheduleError, match="patience"):
        ELScheduler(pool([1]), patience=0)


def test_unsolicited_observation_is_counted():
    s = ELScheduler(pool([2]))
    o = s.observe("L0__g01", rewards_of(3))
    assert not o.solicited and s.progress()["unsolicited"] == 1 and s.stats("L0__g01")["groups"] == 1


def test_state_from_another_pool_or_options_is_refused():
    a = ELScheduler(pool([2]))
    with pytest.raises(ScheduleError, match="different environment pool"):
        ELScheduler(pool([3])).load_state_dict(a.state_dict())
    with pytest.raises(ScheduleError, match="other options"):
        ELScheduler(pool([2]), patience=2).load_state_dict(a.state_dict())
    from envevo.schedule import RandomScheduler

    with pytest.raises(ScheduleError, match="scheduler 'el'"):
        RandomScheduler(pool([2])).load_state_dict(a.state_dict())
