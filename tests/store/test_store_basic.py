"""The lineage store: opening, task versions, lineages, committed generations, history rows, accounting."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from envevo.errors import UserError
from envevo.store import (
    SCHEMA_VERSION,
    LineageStatus,
    LineageStore,
    NewRollout,
    RunPaths,
    StoreError,
    TryStatus,
    VersionCommit,
)
from envevo.task import dir_hash, load_task
from envevo.trace import Direction
from tests.conftest import ROOT
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of


@pytest.fixture
def store(tmp_path: Path):
    with LineageStore.open(tmp_path / "run") as s:
        yield s


def _commit(store: LineageStore, lid: str, g: int, **kw):
    task = kw.pop("task", None) or tiny_task(lid, f"generation {g}")
    args = {
        "direction": "length",
        "effort": "high",
        "trace": trace_of(g + 1),
        "difficulty": difficulty_of(g + 1),
        "verified": True,
    }
    args.update(kw)
    return store.commit_generation(lid, g, task, **args)


# ---- opening ------------------------------------------------------------------------------------
def test_open_creates_wal_store_with_schema_version(tmp_path: Path) -> None:
    with LineageStore.open(tmp_path / "a" / "run") as s:
        assert s.paths.db.is_file()
        assert s.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(tmp_path / "a" / "run" / "store.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [r[0] for r in conn.execute("SELECT version FROM schema_version")] == list(range(1, SCHEMA_VERSION + 1))
    conn.close()


def test_run_paths_tell_a_run_dir(tmp_path: Path) -> None:
    assert not RunPaths.is_run(tmp_path)
    LineageStore.open(tmp_path).close()
    assert RunPaths.is_run(tmp_path) and RunPaths(run_dir=tmp_path).db == tmp_path / "store.sqlite"


def test_open_sets_durability_and_foreign_keys(store: LineageStore) -> None:
    conn = store._db.conn
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000


def test_foreign_keys_reject_orphan_rows(store: LineageStore) -> None:
    with pytest.raises(StoreError, match="no candidate 999"):
        store.add_verification(999, "oracle", True)
    with pytest.raises(StoreError, match="no lineage"):
        store.add_usage("proposer", lineage_id="nope")


def test_open_without_create_never_creates(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        LineageStore.open(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no store.sqlite"):
        LineageStore.open(tmp_path / "empty", create=False)
    assert not (tmp_path / "empty" / "store.sqlite").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file"):
        LineageStore.open(tmp_path / "file", create=False)


def test_open_rejects_garbage_foreign_and_newer_databases(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "store.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError, match="not a readable envevo store"):
        LineageStore.open(bad, create=False)

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    conn = sqlite3.connect(foreign / "store.sqlite")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="not an envevo store"):
        LineageStore.open(foreign)

    newer = tmp_path / "newer"
    LineageStore.open(newer).close()
    conn = sqlite3.connect(newer / "store.sqlite")
    conn.execute("INSERT INTO schema_version VALUES (?, 'later')", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="newer envevo"):
        LineageStore.open(newer)


def test_reopen_keeps_data_and_does_not_remigrate(tmp_path: Path) -> None:
    with LineageStore.open(tmp_path) as s:
        lid = s.create_lineage("seed", tiny_task("seed"))
        _commit(s, lid, 1)
    with LineageStore.open(tmp_path, create=False) as s:
        assert [v.generation for v in s.versions(lid)] == [0, 1]
        assert s.schema_version == SCHEMA_VERSION


# ---- task versions ------------------------------------------------------------------------------
def test_put_task_is_content_addressed_and_idempotent(store: LineageStore) -> None:
    t = tiny_task("x")
    h = store.put_task(t)
    assert h == t.content_hash()
    d = store.task_dir(h)
    assert d == store.run_dir / "tasks" / h and dir_hash(d) == h
    before = {p: p.stat().st_mtime_ns for p in d.rglob("*")}
    assert store.put_task(tiny_task("x")) == h  # same content -> same dir, untouched
    assert {p: p.stat().st_mtime_ns for p in d.rglob("*")} == before
    assert store.load_version_task(h).content_hash() == h
    assert not list((store.run_dir / ".tmp").iterdir())  # no staging left behind


def test_stored_version_is_immutable_snapshot(store: LineageStore) -> None:
    t = tiny_task("x", "original")
    h = store.put_task(t)
    t.write("instruction.md", "changed after put")
    assert "original" in (store.task_dir(h) / "instruction.md").read_text()
    h2 = store.put_task(t)
    assert h2 != h
    assert "original" in (store.task_dir(h) / "instruction.md").read_text()
    assert "changed" in (store.task_dir(h2) / "instruction.md").read_text()


def test_put_task_keeps_executable_bits(store: LineageStore) -> None:
    d = store.task_dir(store.put_task(tiny_task("x")))
    assert os.access(d / "solution" / "solve.sh", os.X_OK) and os.access(d / "tests" / "test.sh", os.X_OK)
    assert not os.access(d / "instruction.md", os.X_OK)


def test_put_task_archives_invalid_candidates(store: LineageStore) -> None:
    t = tiny_task("x")
    t.remove("instruction.md")
    h = store.put_task(t)
    assert (store.task_dir(h) / "tests" / "test.sh").is_file()
    lid = store.create_lineage("x", tiny_task("x"))
    with pytest.raises(StoreError, match="not a runnable task"):
        store.commit_generation(lid, 1, t, direction="length", effort="high", verified=False)
    assert store.next_generation(lid) == 1


def test_task_dir_rejects_non_hashes(store: LineageStore) -> None:
    with pytest.raises(StoreError, match="not a task content hash"):
        store.task_dir("../../etc")
    with pytest.raises(StoreError, match="is not in"):
        store.task_dir("0" * 64)


def test_stale_staging_of_dead_process_is_cleaned_on_open(tmp_path: Path) -> None:
    LineageStore.open(tmp_path).close()
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(proc.stdout)
    stale = tmp_path / ".tmp" / f"put-{dead}-abc"
    stale.mkdir(parents=True)
    live = tmp_path / ".tmp" / f"put-{os.getpid()}-abc"
    live.mkdir()
    LineageStore.open(tmp_path).close()
    assert not stale.exists()
    assert live.exists()  # a live writer's staging dir is left alone


# ---- run config ---------------------------------------------------------------------------------
def test_run_config_round_trip(store: LineageStore) -> None:
    assert store.run_config() is None
    store.set_run_config({"engine": "procedural", "effort": "high", "generations": 15, "seed": 7, "out": Path("/x")})
    assert store.run_config() == {"engine": "procedural", "effort": "high", "generations": 15, "seed": 7, "out": "/x"}
    store.set_run_config({"engine": "llm"})
    assert store.run_config() == {"engine": "llm"}


# ---- lineages and versions ------------------------------------------------------------------------
def test_create_lineage_stores_seed_as_generation_zero(store: LineageStore) -> None:
    seed = tiny_task("seed")
    lid = store.create_lineage("envevo-tests/seed", seed, trace=trace_of(2), difficulty=difficulty_of(2), verified=True)
    assert lid == "seed"
    lin = store.lineage(lid)
    assert (lin.seed_name, lin.seed_hash, lin.status, lin.latest_generation) == (
        "envevo-tests/seed",
        seed.content_hash(),
        LineageStatus.RUNNING,
        0,
    )
    (v0,) = store.versions(lid)
    assert (v0.generation, v0.task_hash, v0.parent_hash, v0.direction, v0.mutated, v0.verified) == (
        0,
        seed.content_hash(),
        None,
        None,
        [],
        True,
    )
    assert v0.trace == trace_of(2) and v0.L == 2 and v0.D_T == 4.0
    assert store.load_version_task(v0.task_hash).instruction == seed.instruction
    assert store.next_generation(lid) == 1


def test_create_lineage_is_idempotent_by_seed_name(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    _commit(store, lid, 1)
    assert store.create_lineage("a", tiny_task("a"), trace=trace_of(3), difficulty=difficulty_of(3)) == lid
    assert len(store.lineages()) == 1
    assert [v.generation for v in store.versions(lid)] == [0, 1]
    assert store.version(lid, 0).trace == trace_of(3)  # filled in where it was missing
    with pytest.raises(UserError, match="different seed task"):
        store.create_lineage("a", tiny_task("a", "another seed"))


def test_lineage_ids_are_unique_slugs(store: LineageStore) -> None:
    a = store.create_lineage("org/my seed!", tiny_task("a"))
    b = store.create_lineage("other/my seed!", tiny_task("b"))
    assert (a, b) == ("my-seed", "my-seed-2")
    assert [lin.id for lin in store.lineages()] == ["my-seed", "my-seed-2"]


def test_commit_generation_round_trip(store: LineageStore) -> None:
    seed = tiny_task("a")
    lid = store.create_lineage("a", seed)
    t1 = tiny_task("a", "harder", env="RUN true\n")
    v1 = store.commit_generation(
        lid, 1, t1, direction="scenario", effort="max", trace=trace_of(3), difficulty=difficulty_of(3), verified=True
    )
    assert v1.parent_hash == seed.content_hash() and v1.task_hash == t1.content_hash()
    assert v1.mutated == ["instruction", "environment"]  # computed from the diff, canonical order
    assert (v1.direction, v1.effort, v1.L, v1.D_T, v1.verified) == ("scenario", "max", 3, 6.0, True)
    assert store.latest_version(lid) == v1 == store.version(lid, 1)
    assert store.next_generation(lid) == 2
    assert store.lineage(lid).latest_generation == 1
    assert store.load_version_task(v1.task_hash).content_hash() == t1.content_hash()
    v2 = _commit(store, lid, 2, mutated={"solution", "verification"})
    assert v2.mutated == ["verification", "solution"] and v2.parent_hash == v1.task_hash
    assert store.check() == []


def test_commit_generation_keeps_generations_contiguous(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    with pytest.raises(StoreError, match="next generation is 1"):
        _commit(store, lid, 2)
    with pytest.raises(StoreError, match="start at 1"):
        _commit(store, lid, 0)
    v1 = _commit(store, lid, 1)
    assert _commit(store, lid, 1) == v1  # the identical re-commit is a no-op
    with pytest.raises(StoreError, match="already committed"):
        _commit(store, lid, 1, task=tiny_task("a", "something else"))
    with pytest.raises(StoreError, match="must extend"):
        _commit(store, lid, 2, parent_hash=store.version(lid, 0).task_hash)
    with pytest.raises(StoreError, match="unknown direction"):
        _commit(store, lid, 2, direction="sideways")
    with pytest.raises(StoreError, match="unknown component"):
        _commit(store, lid, 2, mutated=["everything"])
    with pytest.raises(StoreError, match="no lineage"):
        _commit(store, "ghost", 1)
    assert [v.generation for v in store.versions(lid)] == [0, 1]


def test_a_version_commit_model_commits_as_the_keyword_form(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    t1 = tiny_task("a", "harder", env="RUN true\n")
    row = VersionCommit(lineage_id=lid, generation=1, task=t1, direction=Direction.SCENARIO, effort="max",
                        trace=trace_of(3), difficulty=difficulty_of(3), verified=True)
    with pytest.raises(StoreError, match="unknown direction"):
        store.commit(row.model_copy(update={"direction": "sideways"}))
    v1 = store.commit(row)
    assert (v1.direction, v1.effort, v1.mutated, v1.L) == ("scenario", "max", ["instruction", "environment"], 3)
    assert store.commit_generation(lid, 1, t1, direction="scenario", effort="max", trace=trace_of(3),
                                   difficulty=difficulty_of(3), verified=True) == v1  # the same row: a no-op


def test_commit_generation_links_its_candidate(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    t1, other = tiny_task("a", "one"), tiny_task("a", "two")
    cid = store.add_candidate(lid, 1, "skill", 1, t1)
    wrong = store.add_candidate(lid, 1, "skill", 2, other)
    with pytest.raises(StoreError, match="holds task"):
        store.commit_generation(lid, 1, t1, direction="skill", effort="high", verified=True, candidate_id=wrong)
    v = store.commit_generation(lid, 1, t1, direction="skill", effort="high", verified=True, candidate_id=cid)
    assert v.candidate_id == cid
    assert [c.accepted for c in store.candidates(lid, 1)] == [True, False]


# ---- generation history ---------------------------------------------------------------------------
def test_plans_candidates_and_verifications_round_trip(store: LineageStore) -> None:
    from envevo.evolve._engine import CriterionVerdict, Proposal, Review
    from envevo.runtime import TrialOutcome
    from envevo.verify import VerifierReport

    lid = store.create_lineage("a", tiny_task("a"))
    proposal = Proposal(
        direction="length",
        effort="high",
        before=trace_of(1),
        after=trace_of(2),
        plan={"insert": 1},
        summary="add a step",
    )
    rejected = Review(
        accepted=False,
        criteria=[CriterionVerdict(name="c", reason="too easy", verdict="fail")],
        feedback="make it harder",
    )
    p1 = store.add_plan(lid, 1, "length", 1, proposal, rejected)
    p2 = store.add_plan(lid, 1, "length", 2, proposal, Review(accepted=True))
    p0 = store.add_plan(lid, 1, "skill", 1, None, None, feedback="no skill edit possible")
    plans = store.plans(lid, 1)
    assert [(p.id, p.direction, p.attempt, p.accepted) for p in plans] == [
        (p1, "length", 1, False),
        (p2, "length", 2, True),
        (p0, "skill", 1, False),
    ]
    assert Proposal.model_validate(plans[0].proposal) == proposal
    assert Review.model_validate(plans[0].review) == rejected and plans[0].feedback == "make it harder"
    assert plans[2].proposal is None and plans[2].feedback == "no skill edit possible"

    cand = tiny_task("a", "candidate")
    cid = store.add_candidate(lid, 1, "length", 1, cand, plan_id=p2)
    none_id = store.add_candidate(lid, 1, "length", 2, None, reasons=["modifier produced nothing"])
    outcome = TrialOutcome(task="a", agent="oracle", reward=1.0, turns=3)
    rid = store.add_verifier_report(
        cid, VerifierReport(name="oracle", passed=True, runs=[outcome, outcome]), wall_seconds=12.5
    )
    store.add_verification(cid, "invalid_test", False, ["passed on an untouched environment"], [outcome.model_dump()])
    store.set_candidate_result(cid, False, ["invalid_test: passed on an untouched environment"])
    cands = store.candidates(lid)
    assert [(c.id, c.task_hash, c.accepted, c.plan_id) for c in cands] == [
        (cid, cand.content_hash(), False, p2),
        (none_id, None, False, None),
    ]
    assert cands[0].reasons == ["invalid_test: passed on an untouched environment"]
    assert cands[1].reasons == ["modifier produced nothing"]
    assert store.has_task(cand.content_hash())  # rejected candidates are archived too
    vs = store.verifications(cid)
    assert [(v.id == rid, v.verifier, v.passed, v.wall_seconds) for v in vs] == [
        (True, "oracle", True, 12.5),
        (False, "invalid_test", False, None),
    ]
    assert TrialOutcome.model_validate(vs[0].runs[1]) == outcome
    assert vs[1].reasons == ["passed on an untouched environment"]
    assert store.versions(lid)[-1].generation == 0  # history is not a committed version
    with pytest.raises(StoreError, match="no candidate"):
        store.set_candidate_result(12345, True)


def test_history_only_for_the_generation_in_flight(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    with pytest.raises(StoreError, match="next generation is 1"):
        store.add_plan(lid, 2, "length", 1, None, None)
    _commit(store, lid, 1)
    with pytest.raises(StoreError, match="next generation is 2"):
        store.add_candidate(lid, 1, "length", 1, None)


def test_interrupted_generation_leaves_history_but_no_version(tmp_path: Path) -> None:
    with LineageStore.open(tmp_path) as s:  # a process that dies mid-generation 1
        lid = s.create_lineage("a", tiny_task("a"))
        s.add_plan(lid, 1, "length", 1, {"p": 1}, {"accepted": True})
        s.add_candidate(lid, 1, "length", 1, tiny_task("a", "crashed candidate"), accepted=True)
    with LineageStore.open(tmp_path) as s:  # the resumed run
        assert s.next_generation(lid) == 1 and [v.generation for v in s.versions(lid)] == [0]
        (old,) = s.tries(lid, 1)
        assert old.status is TryStatus.OPEN
        s.add_plan(lid, 1, "skill", 1, {"p": 2}, {"accepted": True})
        cid = s.add_candidate(lid, 1, "skill", 1, tiny_task("a", "resumed candidate"), accepted=True)
        v = s.commit_generation(
            lid,
            1,
            tiny_task("a", "resumed candidate"),
            direction="skill",
            effort="high",
            verified=True,
            candidate_id=cid,
        )
        tries = s.tries(lid, 1)
        assert [t.status for t in tries] == [TryStatus.ABANDONED, TryStatus.COMMITTED]
        assert {p.try_id for p in s.plans(lid, 1)} == {tries[0].id, tries[1].id}
        assert [c.try_id for c in s.candidates(lid, 1)] == [tries[0].id, tries[1].id]
        assert v.direction == "skill" and s.version(lid, 1).candidate_id == cid
        assert s.check() == []


def test_start_generation_abandons_open_tries(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    first = store.start_generation(lid, 1)
    store.add_plan(lid, 1, "length", 1, None, None)
    second = store.start_generation(lid, 1)
    assert [(t.id, t.status) for t in store.tries(lid, 1)] == [(first, TryStatus.ABANDONED), (second, TryStatus.OPEN)]
    assert store.plans(lid, 1)[0].try_id == first


def test_finish_lineage_and_reopen(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    store.add_plan(lid, 1, "length", 1, None, None)
    store.finish_lineage(lid, "terminated", "all three directions failed at generation 1")
    lin = store.lineage(lid)
    assert (lin.status, lin.reason) == (LineageStatus.TERMINATED, "all three directions failed at generation 1")
    assert [t.status for t in store.tries(lid, 1)] == [TryStatus.FAILED]
    assert store.lineages(status="terminated") == [lin] and store.lineages(status="running") == []
    store.finish_lineage(lid, LineageStatus.RUNNING)
    assert store.lineage(lid).status is LineageStatus.RUNNING
    with pytest.raises(ValueError):
        store.finish_lineage(lid, "exploded")
    with pytest.raises(StoreError, match="no lineage 'ghost'.*lineages: a"):
        store.finish_lineage("ghost", "done")


def test_concurrent_lineages_from_one_asyncio_process(store: LineageStore) -> None:
    async def evolve(name: str) -> None:
        lid = store.create_lineage(name, tiny_task(name))
        for g in range(1, 6):
            t = tiny_task(name, f"gen {g}")
            cid = await asyncio.to_thread(store.add_candidate, lid, g, "length", 1, t)
            await asyncio.sleep(0)
            await asyncio.to_thread(
                store.commit_generation, lid, g, t, direction="length", effort="high", verified=True, candidate_id=cid
            )

    async def main() -> None:
        await asyncio.gather(*(evolve(f"l{i}") for i in range(6)))

    asyncio.run(main())
    assert {lin.id: lin.latest_generation for lin in store.lineages()} == {f"l{i}": 5 for i in range(6)}
    assert store.check() == []


def test_two_processes_write_one_store(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.test_store_support", "--max-gen=12", str(tmp_path), *names],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for names in (["p1a", "p1b"], ["p2a", "p2b"])
    ]
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        assert len(stdout.splitlines()) == 24
    with LineageStore.open(tmp_path, create=False) as s:
        assert {lin.id: lin.latest_generation for lin in s.lineages()} == {n: 12 for n in ("p1a", "p1b", "p2a", "p2b")}
        assert s.check() == []


# ---- accounting ------------------------------------------------------------------------------------
def test_rollouts_add_query_and_replace(store: LineageStore) -> None:
    h = store.put_task(tiny_task("a"))
    for k in range(3):
        store.add_rollout(NewRollout(task_hash=h, agent="sim-agent", k=k, model="sim-1", reward=float(k == 1),
                                     turns=10 + k, simulated=True, trial_dir=f"/t/{k}"))
    store.add_rollout(NewRollout(task_hash=h, agent="oracle", k=0, reward=1.0, error_kind="ok"))
    # a re-run of k=0 replaces it
    store.add_rollout(NewRollout(task_hash=h, agent="sim-agent", k=0, model="sim-1", reward=1.0, turns=7, simulated=True))
    rows = store.rollouts(h, agent="sim-agent")
    assert [(r.k, r.reward, r.turns, r.simulated, r.model) for r in rows] == [
        (0, 1.0, 7, True, "sim-1"),
        (1, 1.0, 11, True, "sim-1"),
        (2, 0.0, 12, True, "sim-1"),
    ]
    assert [r.passed for r in rows] == [True, True, False]
    (oracle,) = store.rollouts(agent="oracle")
    assert oracle.model is None and oracle.passed and not oracle.simulated
    assert len(store.rollouts()) == 4 and store.rollouts(model="sim-1") == rows


def test_usage_add_and_totals(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    store.add_usage(
        "proposer", input_tokens=100, output_tokens=10, model="m", cost_usd=0.01, lineage_id=lid, generation=1
    )
    store.add_usage(
        "proposer", input_tokens=50, output_tokens=5, model="m", cost_usd=0.02, lineage_id=lid, generation=2
    )
    store.add_usage("reviewer", input_tokens=7, output_tokens=1, model="m")
    assert [(u.role, u.generation) for u in store.usage(lid)] == [("proposer", 1), ("proposer", 2)]
    totals = {t.role: t for t in store.usage_totals()}
    assert (totals["proposer"].calls, totals["proposer"].input_tokens, totals["proposer"].output_tokens) == (2, 150, 15)
    assert totals["proposer"].cost_usd == pytest.approx(0.03)
    assert totals["reviewer"].cost_usd is None
    assert [t.role for t in store.usage_totals(lid)] == ["proposer"]


def test_usage_outside_lineages_is_its_own_total(store: LineageStore) -> None:
    """Seeds are extracted and judged before their lineage exists: those calls count too (issue 25)."""
    lid = store.create_lineage("a", tiny_task("a"))
    store.add_usage("proposer", input_tokens=100, output_tokens=10, model="m", lineage_id=lid, generation=1)
    store.add_usage("proposer-extract", input_tokens=70, output_tokens=7, model="m")
    store.add_usage("judge", input_tokens=30, output_tokens=3, model="m", cost_usd=0.5)
    outside = {t.role: (t.calls, t.input_tokens, t.output_tokens, t.cost_usd)
               for t in store.usage_totals(outside_lineages=True)}
    assert outside == {"proposer-extract": (1, 70, 7, None), "judge": (1, 30, 3, 0.5)}


# ---- integrity ------------------------------------------------------------------------------------
def test_check_reports_tampered_and_missing_task_dirs(store: LineageStore) -> None:
    lid = store.create_lineage("a", tiny_task("a"))
    v1 = _commit(store, lid, 1)
    v2 = _commit(store, lid, 2)
    assert store.check() == []
    (store.task_dir(v1.task_hash) / "instruction.md").write_text("tampered\n")
    import shutil

    shutil.rmtree(store.task_dir(v2.task_hash))
    problems = store.check()
    assert any("generation 1" in p and "hashes to" in p for p in problems)
    assert any("generation 2" in p and "missing" in p for p in problems)


def test_rows_are_json_in_sqlite(store: LineageStore) -> None:
    """Other tools read store.sqlite directly: JSON columns hold plain JSON."""
    lid = store.create_lineage("a", tiny_task("a"))
    _commit(store, lid, 1)
    row = store._db.conn.execute("SELECT trace, difficulty, mutated, L, D_T FROM versions WHERE generation = 1").fetchone()
    assert json.loads(row["trace"])["goal"] == trace_of(2).goal
    assert json.loads(row["difficulty"])["D_T"] == 4.0 and json.loads(row["mutated"]) == ["instruction"]
    assert (row["L"], row["D_T"]) == (2, 4.0)
    assert load_task(store.task_dir(store.latest_version(lid).task_hash)).instruction.startswith("generation 1")


def test_a_verifier_report_keeps_inconclusive_notes_and_metrics(store: LineageStore) -> None:
    from envevo.verify import VerifierReport

    lid = store.create_lineage("seed", tiny_task("seed"))
    cid = store.add_candidate(lid, 1, "length", 1, tiny_task("c", "candidate"))
    unknown = VerifierReport(name="invalid_test", passed=False, inconclusive=True,
                             reasons=["inconclusive: reward 0, but the test runner never ran"],
                             notes=["llm_hacker: skipped: no model configured"])
    scored = VerifierReport(name="mutation", passed=True, metrics={"mutants": 4, "killed": 4, "score": 1.0})
    store.add_verifier_report(cid, unknown)
    store.add_verifier_report(cid, scored)
    got = {v.verifier: v for v in store.verifications(cid)}
    # Stored as inconclusive, not as a plain failure the task earned.
    assert got["invalid_test"].inconclusive and not got["invalid_test"].passed
    assert got["invalid_test"].notes == ["llm_hacker: skipped: no model configured"]
    assert got["mutation"].metrics == {"mutants": 4, "killed": 4, "score": 1.0} and not got["mutation"].inconclusive


def test_a_schema_2_store_upgrades_and_keeps_its_verifications(tmp_path: Path) -> None:
    from envevo.store._schema import MIGRATIONS

    db = tmp_path / "store.sqlite"
    conn = sqlite3.connect(db)  # a store as envevo wrote it before schema 3
    for version, statements in MIGRATIONS[:2]:
        for stmt in statements:
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_version VALUES (?, 'then')", (version,))
    conn.commit()
    conn.close()
    with LineageStore.open(tmp_path) as s:
        lid = s.create_lineage("seed", tiny_task("seed"))
        cid = s.add_candidate(lid, 1, "length", 1, tiny_task("c", "candidate"))
        old = sqlite3.connect(db)
        old.execute("INSERT INTO verifications (candidate_id, verifier, passed, reasons, runs, created_at) "
                    "VALUES (?, 'oracle', 0, '[\"scored 0.0\"]', '[]', 'then')", (cid,))
        old.commit()
        old.close()
        (v,) = s.verifications(cid)
        assert s.schema_version == SCHEMA_VERSION == 5
        assert (v.passed, v.inconclusive, v.reasons, v.notes, v.metrics) == (False, False, ["scored 0.0"], [], {})
