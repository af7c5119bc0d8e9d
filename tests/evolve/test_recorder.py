"""The Recorder boundary: a generation buffered on a (Ray) worker and replayed by the driver leaves the store exactly
as the same generation written straight to it; a buffer holding anything but the known writes is refused before
the store is touched."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest

from envevo.evolve import EvolveConfig
from envevo.evolve._engine import Proposal, Review
from envevo.evolve._loop import GenerationWork
from envevo.evolve._recorder import AddPlan, BufferRecorder, Recorder, Ref, StoreRecorder, replay
from envevo.runtime import TrialOutcome
from envevo.store import LineageStore, StoreError, VersionCommit
from envevo.verify import VerifierReport
from tests.evolve.test_evolve_loop import FailingOnceEngine, Gate, seed_task
from tests.evolve.test_evolve_loop import trace_of as trace_in
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of

SEED = tiny_task("a")


async def one_generation[I](rec: Recorder[I], lid: str) -> None:
    """What the loop writes for a generation: a rejected plan, an accepted one, a failed and a verified candidate."""
    proposal = Proposal(direction="length", effort="high", before=trace_of(1), after=trace_of(2), summary="a step")
    await rec.add_plan(lid, 1, "length", 1, proposal, Review(accepted=False, feedback="too easy"))
    plan = await rec.add_plan(lid, 1, "length", 2, proposal, Review(accepted=True))
    await rec.add_candidate(lid, 1, "length", 1, None, plan_id=plan, accepted=False, reasons=["modifier: nothing"])
    candidate = tiny_task("a", "candidate")
    cid = await rec.add_candidate(lid, 1, "length", 2, candidate, plan_id=plan)
    outcome = TrialOutcome(task="a", agent="oracle", reward=1.0, turns=3)
    await rec.add_verifier_report(cid, VerifierReport(name="oracle", passed=True, runs=[outcome]), wall_seconds=1.5)
    await rec.set_candidate_result(cid, True, [])
    await rec.commit_generation(VersionCommit(lineage_id=lid, generation=1, task=candidate, direction="length",
                                              effort="high", trace=trace_of(2), difficulty=difficulty_of(2),
                                              verified=True, parent_hash=SEED.content_hash()), candidate_id=cid)


def rows(store: LineageStore, lid: str) -> dict[str, list[dict[str, object]]]:
    """The generation's rows, ids included (a faithful replay assigns the same ones), timestamps left out."""
    cands = store.candidates(lid)
    return {
        "plans": [p.model_dump(exclude={"created_at"}) for p in store.plans(lid)],
        "candidates": [c.model_dump(exclude={"created_at"}) for c in cands],
        "verifications": [v.model_dump(exclude={"created_at", "wall_seconds"})  # a clock reading
                          for c in cands for v in store.verifications(c.id)],
        "versions": [v.model_dump(exclude={"created_at"}) for v in store.versions(lid)],
    }


def buffered(tmp_path: Path) -> BufferRecorder:
    return BufferRecorder({SEED.content_hash(): SEED}, SEED.content_hash(), tmp_path / "work")


def test_a_buffered_generation_replays_in_order_as_written_directly(tmp_path: Path) -> None:
    with LineageStore.open(tmp_path / "direct") as store:
        lid = store.create_lineage("a", SEED)
        asyncio.run(one_generation(StoreRecorder(store), lid))
        direct = rows(store, lid)

    rec = buffered(tmp_path)
    asyncio.run(one_generation(rec, lid))
    rec.add_usage("modifier", input_tokens=10, output_tokens=5, model="m", cost_usd=0.01, lineage_id=lid, generation=1)
    assert [r.op for r in rec.records] == ["add_plan", "add_plan", "add_candidate", "add_candidate",
                                           "add_verifier_report", "set_candidate_result", "commit_generation",
                                           "add_usage"]
    shipped = pickle.loads(pickle.dumps(rec.records))  # as Ray sends them back to the driver
    with LineageStore.open(tmp_path / "replayed") as store:
        assert store.create_lineage("a", SEED) == lid
        replay(store, shipped)
        assert rows(store, lid) == direct
        assert store.latest_version(lid).generation == 1
        [usage] = store.usage(lid)
        assert (usage.role, usage.input_tokens, usage.output_tokens, usage.generation) == ("modifier", 10, 5, 1)
        assert store.check() == []


@pytest.mark.parametrize("tampered", [
    {"op": "drop_lineage", "lineage_id": "a"},  # a write the driver does not know
    AddPlan.model_construct(op="finish_lineage", lineage_id="a"),  # a known model claiming another op
    "add_plan",  # not a record at all
])
def test_a_buffer_with_an_unknown_write_is_refused_before_any_write(tmp_path: Path, tampered: object) -> None:
    rec = buffered(tmp_path)
    with LineageStore.open(tmp_path / "run") as store:
        lid = store.create_lineage("a", SEED)
        asyncio.run(one_generation(rec, lid))
        with pytest.raises(StoreError, match="does not replay"):
            replay(store, [*rec.records[:-1], tampered, rec.records[-1]])
        assert store.plans(lid) == [] and store.candidates(lid) == []
        assert store.latest_version(lid).generation == 0


def test_a_record_naming_a_row_not_written_before_it_is_refused(tmp_path: Path) -> None:
    rec = buffered(tmp_path)
    asyncio.run(rec.set_candidate_result(Ref(index=3), True))
    with LineageStore.open(tmp_path / "run") as store:
        with pytest.raises(StoreError, match="record 3"):
            replay(store, rec.records)


def test_the_loops_generation_buffered_and_replayed_is_the_one_written_directly(tmp_path: Path) -> None:
    """GenerationWork itself (a Modifier failure, then a verified candidate and the commit) through either recorder."""

    def generation(run: str, buffer: bool) -> dict[str, list[dict[str, object]]]:
        with LineageStore.open(tmp_path / run) as store:
            seed = seed_task()
            lid = store.create_lineage("hello", seed, trace=trace_in(seed))
            parent = store.latest_version(lid)
            work = GenerationWork(FailingOnceEngine(), EvolveConfig(generations=1), checks=[Gate()],
                                  verifiers=[])
            if buffer:
                rec = BufferRecorder({parent.task_hash: store.load_version_task(parent.task_hash)}, parent.task_hash,
                                     tmp_path / run / "work")
                assert asyncio.run(work.run(lid, 1, parent, rec)) is None
                assert store.latest_version(lid).generation == 0  # nothing is written until the driver replays
                replay(store, pickle.loads(pickle.dumps(rec.records)))
            else:
                assert asyncio.run(work.run(lid, 1, parent, StoreRecorder(store))) is None
            assert store.latest_version(lid).generation == 1
            return rows(store, lid)

    direct = generation("direct", buffer=False)
    assert [c["accepted"] for c in direct["candidates"]] == [False, True]
    assert generation("replayed", buffer=True) == direct
