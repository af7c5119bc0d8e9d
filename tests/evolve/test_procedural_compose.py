"""Composing chains into Harbor tasks, reading them back, the rule-based quality check, and the engine."""

import asyncio
import random
import subprocess
import sys

import pytest

from envevo.catalog import (
    CatalogPrior,
    Chain,
    ChainProblemKind,
    ChainStep,
    block_snippets,
    build_blocks,
    chain_from_task,
    chain_problems,
    goal_categories,
    random_chain,
)
from envevo.catalog._blocks import _build
from envevo.errors import TaskError, UserError
from envevo.evolve._engine import GenerationContext
from envevo.evolve.engines.procedural import ProceduralEngine, compose, quality_check, write_task
from envevo.task import load_task
from envevo.trace import Direction, Effort
from tests.conftest import ROOT


def _chain(*pairs, seed=1):
    return Chain(goal="Incident response: x", category="incident-response", seed=seed,
                 steps=tuple(ChainStep(scenario=a, skill=b, seed=i) for i, (a, b) in enumerate(pairs)))


def test_composed_task_is_a_complete_harbor_task(tmp_path):
    chain = random_chain("data-reconciliation", 4, 5)
    task = load_task(write_task(chain, tmp_path / "t"))
    fixtures = tuple(f"environment/fixtures/{s.scenario}.py" for s in chain.steps)
    for path in ("instruction.md", "environment/Dockerfile", *fixtures, "solution/solve.sh",
                 "tests/test.sh", "tests/test_outputs.py"):
        assert task.has(path), path
    assert task.files["solution/solve.sh"].executable and task.files["tests/test.sh"].executable
    assert task.config["schema_version"] == "1.4"
    meta = task.envevo_metadata
    assert meta["trace"] == chain.trace().model_dump(mode="json") and meta["goal"] == chain.goal
    assert task.config["metadata"]["category"] == "data-reconciliation"
    assert chain_from_task(task) == chain
    assert "reward.txt" in task.read_text("tests/test.sh")
    # nothing of the solution or tests travels into the image
    assert not any(p.startswith(("environment/solution", "environment/tests")) for p in task.paths())
    assert "solution" not in task.read_text("environment/Dockerfile").split("WORKDIR", 1)[1]


def test_instruction_names_every_file_to_produce_and_its_format():
    chain = random_chain("backup-recovery", 4, 9)
    text = compose(chain).read_text("instruction.md")
    blocks = build_blocks(chain)
    for b in blocks:
        for path in b.produces:
            assert path in text
    assert blocks[-1].out_path.startswith("/app/output/") and all(b.out_path.startswith("/app/work/") for b in blocks[:-1])
    assert chain.goal.split(": ", 1)[1] in text


def test_steps_depend_on_each_other():
    blocks = build_blocks(random_chain("capacity-planning", 4, 2))
    for prev, b in zip(blocks, blocks[1:], strict=False):
        assert b.in_path == prev.out_path
        assert prev.out_path in b.instruction and prev.out_path in b.oracle_sh


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_composition_is_deterministic_for_a_seed(seed):
    chain = random_chain(None, 4, seed)
    first = compose(chain).content_hash()
    _build.cache_clear()
    assert compose(random_chain(None, 4, seed)).content_hash() == first
    # and in a fresh interpreter with another string-hash salt
    code = ("from envevo.catalog import random_chain; from envevo.evolve.engines.procedural import compose;"
            f"print(compose(random_chain(None, 4, {seed})).content_hash())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == first


def test_different_seeds_give_different_tasks():
    assert compose(random_chain("ci-triage", 3, 1)).content_hash() != compose(random_chain("ci-triage", 3, 2)).content_hash()


def test_each_step_exposes_an_oracle_and_a_wrong_variant():
    chain = random_chain("security-audit", 4, 4)
    solve = compose(chain).read_text("solution/solve.sh")
    pos = -1
    for t in range(chain.L):
        oracle, wrong = block_snippets(chain, t)
        assert oracle != wrong
        assert solve.index(oracle) > pos
        pos = solve.index(oracle)


def test_chain_problems_catch_ill_typed_chains():
    def kinds(*pairs):
        return [p.kind for p in chain_problems(_chain(*pairs))]

    assert kinds(("csv_export", "regex_filter"), ("passwd_file", "sed_edit")) == []
    assert kinds(("csv_export", "git_log")) == [ChainProblemKind.INCOMPATIBLE]  # skill does not apply there
    # sed needs names to edit: cannot start a chain
    assert kinds(("passwd_file", "sed_edit")) == [ChainProblemKind.ILL_TYPED]
    # a number feeds nothing
    assert kinds(("csv_export", "wc_count"), ("passwd_file", "regex_filter")) == [ChainProblemKind.ILL_TYPED]
    assert kinds(("csv_export", "regex_filter"), ("csv_export", "awk_aggregate")) == [ChainProblemKind.SCENARIO_TWICE]
    (problem,) = chain_problems(_chain(("csv_export", "git_log")))
    assert str(problem) == "step 1: skill git_log does not apply to scenario csv_export"  # the words users see
    with pytest.raises(TaskError):
        compose(_chain(("csv_export", "git_log")))


def test_random_chain_validates_its_arguments():
    assert len(goal_categories()) >= 6
    assert random_chain("ci-triage", 3, 7) == random_chain("ci-triage", 3, 7)
    assert random_chain("ci-triage", 3, 7).category == "ci-triage" and random_chain("ci-triage", 3, 7).L == 3
    with pytest.raises(UserError):
        random_chain("no-such-category", 3, 7)
    with pytest.raises(UserError):
        random_chain("ci-triage", 0, 7)


def test_quality_check_passes_composed_tasks_and_flags_broken_ones():
    task = compose(random_chain("config-migration", 3, 3))
    assert quality_check(task) == []

    blocks = build_blocks(chain_from_task(task))
    hidden = task.model_copy(deep=True)
    hidden.write("instruction.md", task.read_text("instruction.md").replace(blocks[0].out_path, "the first file"))
    assert any("does not mention" in p for p in quality_check(hidden))

    leaky = task.model_copy(deep=True)
    leaky.write("environment/Dockerfile", task.read_text("environment/Dockerfile") + "COPY solution/solve.sh /app/\n")
    leaky.write("environment/solve.sh", "echo cheat\n")
    assert len([p for p in quality_check(leaky) if "solution" in p]) == 2

    vacuous = task.model_copy(deep=True)
    vacuous.write("tests/test_outputs.py", "CHECKS = []\n")
    assert quality_check(vacuous)


def _ctx(tmp_path, seed=0):
    return GenerationContext(lineage="l", generation=1, rng=random.Random(seed), workdir=tmp_path)


async def _propose(engine, task, direction, effort, ctx):
    """The engine's proposal for `task` from its own extracted trace."""
    return await engine.propose(task, await engine.extract_trace(task), direction, effort, [], ctx)


@pytest.mark.parametrize("direction", list(Direction))
def test_engine_proposes_reviews_and_modifies(tmp_path, direction):
    engine = ProceduralEngine()
    assert engine.name == "procedural" and isinstance(engine.reference(), CatalogPrior)
    task = compose(random_chain("incident-response", 3, 21))

    async def run():
        trace = await engine.extract_trace(task)
        proposal = await engine.propose(task, trace, direction, Effort.HIGH, [], _ctx(tmp_path))
        assert proposal is not None and proposal.before == trace
        review = await engine.review(task, proposal, _ctx(tmp_path))
        assert review.accepted, review.feedback
        assert {c.verdict for c in review.criteria} == {"pass"}
        assert proposal.plan["D_T_after"] > proposal.plan["D_T_before"]
        new = await engine.modify(task, proposal, [], _ctx(tmp_path))
        assert (await engine.extract_trace(new)) == proposal.after
        assert quality_check(new) == []
        retry = await engine.modify(task, proposal, ["oracle: failed"], _ctx(tmp_path))
        assert (await engine.extract_trace(retry)) == proposal.after  # same ξ′, another draw of the new steps
        return proposal

    asyncio.run(run())


def test_review_rejects_plans_that_break_the_rules(tmp_path):
    engine = ProceduralEngine()
    task = compose(random_chain("incident-response", 3, 21))

    async def run():
        p = await _propose(engine, task, Direction.SCENARIO, Effort.LOW, _ctx(tmp_path))
        wrong_direction = p.model_copy(update={"direction": Direction.SKILL})
        r = await engine.review(task, wrong_direction, _ctx(tmp_path))
        assert not r.accepted and "direction" in r.feedback
        backwards = p.model_copy(update={"before": p.after, "after": p.before,
                                         "plan": {**p.plan, "chain": chain_from_task(task).model_dump(mode="json")}})
        r = await engine.review(task, backwards, _ctx(tmp_path))
        assert not r.accepted and "difficulty_raised" in r.feedback
        garbage = p.model_copy(update={"plan": {"chain": {"nope": 1}}})
        assert not (await engine.review(task, garbage, _ctx(tmp_path))).accepted

    asyncio.run(run())


def test_engine_propose_is_deterministic_under_the_generation_rng(tmp_path):
    engine = ProceduralEngine()
    task = compose(random_chain("ci-triage", 3, 8))

    async def once():
        return await _propose(engine, task, Direction.LENGTH, Effort.HIGH, _ctx(tmp_path, seed=5))

    assert asyncio.run(once()) == asyncio.run(once())
