"""A seed (the user's task) whose tests miss a near miss is weak: the seed gate says so and accepts it, unless
`--mutation strict`; envevo's own candidates stay strict: a surviving near miss rejects one (issue 36)."""

import asyncio

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.store import LineageStore
from envevo.verify import VerifierReport
from tests.evolve.test_evolve_loop import ScriptedEngine, seed_task, trace_of

SURVIVOR = "prefix-2of3: survived: solve.sh cut after command 2 of 3 scored 1.0, not 0"


class Weak:
    """The mutation verifier's report on a task whose tests let one near miss through (no container)."""

    name = "mutation"

    async def check(self, task, task_dir):
        return VerifierReport(name="mutation", passed=False, weak=True, reasons=[SURVIVOR])


def _start(tmp_path, mutation):
    store = LineageStore.open(tmp_path / "run")
    events = []
    todo = asyncio.run(start_lineages(store, [("hello", seed_task())], ScriptedEngine(),
                                      EvolveConfig(generations=1, mutation=mutation), checks=[Weak()], verifiers=[],
                                      on_event=events.append))
    return store, todo, events


def test_a_weak_seed_is_accepted_and_said(tmp_path):
    store, todo, events = _start(tmp_path, "sample:4")
    assert todo == ["hello"] and store.lineage("hello").status == "running"
    (weak,) = [e for e in events if e.stage == "weak"]
    assert "the seed is weak (accepted; --mutation strict rejects it)" in weak.detail and SURVIVOR in weak.detail


def test_strict_rejects_a_weak_seed(tmp_path):
    store, todo, _ = _start(tmp_path, "strict")
    lin = store.lineage("hello")
    assert todo == [] and lin.status == "terminated"
    assert lin.reason.startswith("the seed is not sound: ") and SURVIVOR in lin.reason


def test_envevos_own_candidate_with_a_surviving_near_miss_is_rejected(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    seed = seed_task()
    lid = store.create_lineage("hello", seed, trace=trace_of(seed))
    statuses = asyncio.run(evolve(store, [lid], ScriptedEngine(), EvolveConfig(generations=1, env_budget=1),
                                  checks=[Weak()], verifiers=[]))
    assert statuses[lid] == "terminated" and store.lineage(lid).latest_generation == 0
    assert all(not c.accepted and any(SURVIVOR in r for r in c.reasons) for c in store.candidates(lid, 1))
