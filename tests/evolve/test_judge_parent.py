"""The rubric judge judges a seed without gating it, and a candidate against its parent: it sees the parent's ξ, the
plan's ξ′ and the diff, and a criterion the parent already failed does not reject the child for the same reason."""

import asyncio

from envevo.evolve import Proposal
from envevo.evolve.engines.llm import RubricJudge
from envevo.evolve.engines.llm._judge import Evolution, render_diff
from envevo.llm import LLMRuntime, LLMSettings, default_rubric
from envevo.task import load_task
from envevo.trace import Direction, Effort, Step, Trace
from tests.fakes import log_forensics as lf
from tests.fakes.models import last_prompt, scripted


def seed_trace():
    return Trace(goal=lf.GOAL, final=lf.FINAL, steps=tuple(Step(scenario=s, skill=k) for s, k in lf.STEPS))


def evolved():
    """The log-forensics seed, its length candidate (the scripted Modifier's edits) and the plan behind it."""
    seed = load_task(lf.SEED)
    candidate = load_task(lf.SEED)
    candidate.write("instruction.md", lf.new_instruction())
    candidate.write("tests/test_outputs.py", lf.new_tests())
    candidate.write("solution/solve.sh", lf.new_solution())
    after = Trace(goal=lf.GOAL, final=lf.FINAL, steps=(*seed_trace().steps, Step(scenario=lf.NEW_STEP[0], skill=lf.NEW_STEP[1])))
    plan = lf.plan(clarified=True)
    proposal = Proposal(direction=Direction.LENGTH, effort=Effort.HIGH, before=seed_trace(), after=after,
                        plan={"rationale": plan["rationale"], "changes": plan["changes"]}, summary=plan["summary"])
    return seed, candidate, Evolution(parent=seed, proposal=proposal)


def judge_with(model, evolutions):
    rt = LLMRuntime(LLMSettings(output_retries=1), models={r: model if r == "judge" else scripted() for r in
                                                           ("proposer", "reviewer", "modifier", "judge")})
    return RubricJudge(rt, default_rubric("task"), lineage=lambda h: evolutions.get(h))


def test_a_candidate_is_not_rejected_for_a_flaw_its_seed_already_had_and_sees_parent_plan_and_diff():
    seed, candidate, ev = evolved()
    model = scripted(lf.task_review(fail="anti_cheating_measures"),
                     lf.task_review(fail="anti_cheating_measures", evolved=True))
    judge = judge_with(model, {candidate.content_hash(): ev})

    on_seed = asyncio.run(judge.check(seed, lf.SEED))
    assert not on_seed.passed and on_seed.reasons[0].startswith("anti_cheating_measures (critical):")
    on_child = asyncio.run(judge.check(candidate, lf.SEED))
    assert on_child.passed, on_child.reasons
    assert any(n.startswith("anti_cheating_measures: failed by the parent too") for n in on_child.notes)

    seed_request, child_request = model.seen
    # The seed is judged on Harbor's criteria alone; the candidate on the evolution criteria too.
    assert "realizes_plan" not in str(seed_request[0]) and "realizes_plan" in str(child_request[0])
    text = last_prompt(child_request)
    assert "ξ of the parent:" in text and "ξ′ the plan targets:" in text and lf.NEW_STEP[1] in text
    assert "+- `exfil_datasets` (array of strings)" in text  # the diff
    assert "The parent already fails these criteria" in text and "- anti_cheating_measures: checked" in text


def test_a_new_critical_failure_still_rejects_the_candidate():
    seed, candidate, ev = evolved()
    model = scripted(lf.task_review(), lf.task_review(fail="realizes_plan", evolved=True))
    judge = judge_with(model, {candidate.content_hash(): ev})
    assert asyncio.run(judge.check(seed, lf.SEED)).passed
    report = asyncio.run(judge.check(candidate, lf.SEED))
    assert not report.passed and report.reasons[0].startswith("realizes_plan (critical): checked realizes plan")


def test_noncritical_failures_within_the_threshold_pass_with_notes():
    seed, candidate, ev = evolved()
    review = lf.task_review(fail="typos", evolved=True)
    model = scripted(lf.task_review(), review)
    judge = judge_with(model, {candidate.content_hash(): ev})
    asyncio.run(judge.check(seed, lf.SEED))
    report = asyncio.run(judge.check(candidate, lf.SEED))
    assert report.passed and report.reasons == []
    assert "failed, within the threshold: typos: checked typos against the files" in report.notes
    assert report.notes[-1].startswith("rubric score 0.94 (threshold 0.80")


def test_a_resumed_run_judges_the_parent_once_before_its_first_child():
    _, candidate, ev = evolved()
    model = scripted(lf.task_review(fail="typos"), lf.task_review(fail="typos", evolved=True),
                     lf.task_review(evolved=True))
    judge = judge_with(model, {candidate.content_hash(): ev})  # this judge never saw the seed
    first = asyncio.run(judge.check(candidate, lf.SEED))
    assert first.passed and any(n.startswith("typos: failed by the parent too") for n in first.notes)
    assert len(model.seen) == 2 and "realizes_plan" not in str(model.seen[0][0])  # the parent, on the seed's criteria
    asyncio.run(judge.check(candidate, lf.SEED))
    assert len(model.seen) == 3  # the parent's verdict is kept


def test_the_diff_is_bounded():
    seed, candidate, _ = evolved()
    whole = render_diff(seed, candidate)
    assert "instruction.md" in whole and "tests/test_outputs.py" in whole
    short = render_diff(seed, candidate, max_chars=200)
    assert "diff not shown, the size budget is spent" in short and len(short) < len(whole)
