"""Residual edits: an edit rewrites only what the edited steps own, and the record says why anything else moved."""

import asyncio
import random

import pytest

from envevo.catalog import Chain, ChainStep, build_blocks, chain_from_task, random_chain
from envevo.evolve.engines.procedural import compose, mutate, write_task
from envevo.evolve.engines.procedural._operators import apply_pairs
from envevo.evolve.engines.procedural._residual import EDITED, KEPT, NEW, RECOMPUTED, REGENERATED, REMOVED, residual
from envevo.evolve.engines.procedural._task_from_chain import fixture_path
from envevo.task import diff_tasks
from envevo.verify import InvalidTestVerifier, OracleVerifier, verify_tasks


def _files(chain):
    return compose(chain).render_files()


def _lineage(direction, effort, seed, generations=4, length=3):
    chain = random_chain(None, length, seed)
    rng = random.Random(seed)
    out = [chain]
    for _ in range(generations):
        new = mutate(out[-1], direction, effort, rng)
        if new is None:
            break
        out.append(new)
    return out


@pytest.mark.parametrize("direction,effort", [("skill", "low"), ("scenario", "low"), ("length", "low"), ("skill", "max")])
def test_unchanged_steps_keep_byte_identical_fixture_files(direction, effort):
    for seed in range(3):
        chains = _lineage(direction, effort, seed, generations=3)
        for a, b in zip(chains, chains[1:], strict=False):
            fa, fb = _files(a), _files(b)
            rows = residual(a, b)
            assert {r["status"] for r in rows} <= {KEPT, RECOMPUTED, EDITED, REGENERATED, NEW, REMOVED}
            for r in rows:
                if r["status"] in (KEPT, RECOMPUTED, EDITED):  # fixtures kept: the step's file is the same bytes
                    path = fixture_path(r["scenario"])
                    assert fa[path] == fb[path], (direction, effort, seed, r)
                elif r["status"] in (NEW, REGENERATED):
                    assert fb[fixture_path(r["scenario"])] != fa.get(fixture_path(r["scenario"])), r
            removed = {r["scenario"] for r in rows if r["status"] == REMOVED}
            assert all(fixture_path(s) not in fb for s in removed)
            # the steps before the first one the edit names stay whole
            first = next(i for i, r in enumerate(rows) if r["status"] != KEPT or r["step"] is None)
            assert all(r["status"] == KEPT for r in rows[:first])


def test_a_skill_swap_keeps_the_scenario_fixtures_and_says_why_later_steps_changed():
    found = False
    for seed in range(12):
        chain = random_chain(None, 3, seed)
        new = mutate(chain, "skill", "low", random.Random(seed))
        if new is None:
            continue
        rows = residual(chain, new)
        edited = [r for r in rows if r["status"] != KEPT]
        if not edited or edited[0]["status"] != EDITED:
            continue
        found = True
        i = edited[0]["step"] - 1
        assert new.steps[i].pin is not None and new.steps[i].pin.skill == chain.steps[i].skill
        assert "fixtures are kept" in edited[0]["why"]
        for r in edited[1:]:
            assert r["status"] in (RECOMPUTED, REGENERATED, KEPT)
            if r["status"] == RECOMPUTED:
                assert "its input changed" in r["why"] and "fixtures kept" in r["why"]
        mutated = diff_tasks(compose(chain), compose(new)).mutated
        if all(r["status"] != REGENERATED for r in rows):
            assert "environment" not in mutated  # no fixture file changed
        assert {"instruction", "solution", "verification"} & mutated
    assert found


def test_pinned_chains_rebuild_deterministically_from_their_metadata():
    chain = random_chain("ci-triage", 3, 4)
    for d in ("skill", "length", "scenario"):
        new = mutate(chain, d, "high", random.Random(9))
        if new is None:
            continue
        task = compose(new)
        assert chain_from_task(task) == new
        assert compose(chain_from_task(task)).content_hash() == task.content_hash()
        chain = new


def test_a_chain_without_pins_keeps_its_name():
    # Pins are left out of the digest when absent: seeds composed before residual edits keep their names.
    c = Chain(goal="g: x", category="ci-triage", seed=1, steps=(ChainStep(scenario="csv_export", skill="awk_aggregate", seed=2),))
    assert '"pin"' not in c.model_dump_json(exclude_none=True)
    assert compose(c).name == f"envevo/procedural-ci-triage-{c.digest()[:10]}"


def test_the_engine_records_the_residual_in_its_plan():
    from envevo.evolve.engines.procedural import ProceduralEngine
    chain = random_chain("data-reconciliation", 3, 2)
    engine = ProceduralEngine()
    task = compose(chain)

    class Ctx:
        rng = random.Random(5)

    proposal = asyncio.run(engine.propose(task, chain.trace(), "skill", "low", [], Ctx()))  # type: ignore[arg-type]
    assert proposal is not None
    rows = proposal.plan["residual"]
    assert len([r for r in rows if r["step"] is not None]) == 3 and any(r["status"] != KEPT for r in rows)


@pytest.mark.sandbox
def test_residual_edits_pass_the_oracle_and_fail_the_empty_solution(sandbox, tmp_path):
    """Tasks whose steps ask new questions of kept fixtures verify in real containers."""
    tasks = []
    for seed in range(4):
        chain = random_chain(None, 3, 20 + seed)
        for direction in ("skill", "length"):
            new = mutate(chain, direction, "high", random.Random(seed))
            if new is not None and any(s.pin for s in new.steps):
                tasks.append((f"r{seed}{direction}", write_task(new, tmp_path / "tasks" / f"r{seed}{direction}")))
                chain = new
    assert len(tasks) >= 3
    verdicts = asyncio.run(verify_tasks(tasks, tmp_path / "trials", env=sandbox,
                                        verifiers=[OracleVerifier(repeats=1), InvalidTestVerifier()], concurrency=3))
    bad = {v.task: v.reasons for v in verdicts if not v.ok}
    assert not bad, bad


def test_apply_pairs_is_the_identity_on_the_same_pairs():
    chain = random_chain("ci-triage", 4, 3)
    assert apply_pairs(chain, chain.pairs(), random.Random(0)) == chain
    assert [r["status"] for r in residual(chain, chain)] == [KEPT] * 4
    assert build_blocks(chain)  # still generates
