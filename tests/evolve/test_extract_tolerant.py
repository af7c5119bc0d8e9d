"""Extraction evidence is matched tolerantly and retried more; a candidate's ξ is re-extracted and must realize ξ′."""

import asyncio

import pytest

from envevo.evolve import Proposal
from envevo.evolve.engines.llm import Extraction, evidence_problems, extract
from envevo.evolve.engines.llm._extract import EXTRACT_RETRIES, quote_in
from envevo.evolve.engines.llm._judge import Evolution
from envevo.evolve.engines.llm._realize import RealizesPlan, realization_problems
from envevo.llm import LLMRuntime, LLMSettings, RoleFailed
from envevo.task import load_task
from envevo.trace import Direction, Effort, Step, Trace
from tests.fakes import log_forensics as lf
from tests.fakes.models import last_prompt, scripted

TEXT = "Write `/app/report.json`: the client IP with the most\n   failed login attempts — and the account name’s first login."


@pytest.mark.parametrize("quote", [
    "the client IP with the most failed login attempts",
    "the client IP with the most\nfailed   login attempts",  # whitespace and line breaks
    "Write /app/report.json",  # backticks dropped
    '"the client IP with the most failed login attempts"',  # outer quotation marks
    "attempts - and the account name's first login",  # typographic dash and apostrophe
    "Write `/app/report.json`: the client IP ... the account name’s first login",  # an elided middle
    "the client IP … failed login attempts",
])
def test_a_quote_is_found_up_to_what_models_do_to_quotes(quote):
    assert quote_in(quote, TEXT)


@pytest.mark.parametrize("quote", ["the server IP with the most failed login attempts", "first login ... the client IP",
                                   "...", ""])
def test_words_that_are_not_there_are_not_found(quote):
    assert not quote_in(quote, TEXT)


def runtime(model):
    return LLMRuntime(LLMSettings(output_retries=2), models={r: model if r == "proposer" else scripted() for r in
                                                             ("proposer", "reviewer", "modifier", "judge")})


def test_a_quote_attributed_to_the_wrong_evidence_file_is_still_evidence():
    task = load_task(lf.SEED)
    out = lf.extraction()
    out["steps"][0]["evidence"] = [{"file": "tests/test_outputs.py",  # it is in instruction.md
                                    "quote": "the client IP with the most failed login attempts"}]
    assert evidence_problems(task, Extraction.model_validate(out)) == []
    out["steps"][0]["evidence"] = [{"file": "environment/Dockerfile", "quote": "FROM"}]  # not evidence at all
    assert "is not the instruction, a solution file or a test file" in evidence_problems(task, Extraction.model_validate(out))[0]


def test_extraction_gets_more_retries_than_the_other_roles():
    bad = lf.extraction()
    bad["steps"][1]["evidence"] = [{"file": "instruction.md", "quote": "the attacker used a VPN"}]
    model = scripted(*[bad] * EXTRACT_RETRIES, lf.extraction())
    assert asyncio.run(extract(runtime(model), load_task(lf.SEED))).trace().L == 3
    assert len(model.seen) == EXTRACT_RETRIES + 1 > 2 + 1  # output_retries is 2 for the other roles
    model = scripted(*[bad] * (EXTRACT_RETRIES + 1))
    with pytest.raises(RoleFailed):
        asyncio.run(extract(runtime(model), load_task(lf.SEED)))


def planned():
    before = Trace(goal=lf.GOAL, final=lf.FINAL, steps=tuple(Step(scenario=s, skill=k) for s, k in lf.STEPS))
    after = Trace(goal=lf.GOAL, final=lf.FINAL, steps=(*before.steps, Step(scenario=lf.NEW_STEP[0], skill=lf.NEW_STEP[1])))
    return before, after


def evolution(effort=Effort.HIGH):
    before, after = planned()
    return Evolution(parent=load_task(lf.SEED), proposal=Proposal(direction=Direction.LENGTH, effort=effort,
                                                                  before=before, after=after))


def test_realization_is_checked_against_the_plans_direction_and_effort():
    before, after = planned()
    ev = evolution()
    assert realization_problems(ev, after) == []
    (problem,) = realization_problems(ev, before)  # the new step is not in the files
    assert problem.startswith("the candidate does not realize its plan: ξ re-extracted from its files (L=3)")
    assert "length must insert at least one pair" in problem and lf.NEW_STEP[1] in problem
    # Other words for the new step: still one inserted pair, within the bound.
    other = Trace(goal=lf.GOAL, steps=(*before.steps, Step(scenario=lf.NEW_STEP[0], skill="list the exported datasets")))
    assert realization_problems(ev, other) == []
    # A realized ξ that also rewrote an earlier pair is more than low effort allows from ξ′.
    rewritten = Trace(goal=lf.GOAL, steps=(Step(scenario="web logs", skill="count"), *other.steps[1:]))
    assert realization_problems(evolution(Effort.LOW), rewritten)


def test_re_extraction_prefers_the_plans_wording_and_the_check_reports_it():
    _, after = planned()
    ev = evolution()
    candidate = load_task(lf.SEED)
    candidate.write("instruction.md", lf.new_instruction())
    candidate.write("tests/test_outputs.py", lf.new_tests())
    cosmetic = lf.candidate_extraction()
    cosmetic["steps"][3]["skill"] = lf.NEW_STEP[1].upper() + "."
    model = scripted(cosmetic, lf.extraction())

    async def reextract(task, evo):
        out = await extract(runtime(model), task, prefer=evo.proposal.after)
        return out.trace(prefer=evo.proposal.after)

    check = RealizesPlan(lambda h: ev if h == candidate.content_hash() else None, reextract)
    ok = asyncio.run(check.check(candidate, lf.SEED))
    assert ok.passed and ok.name == "realizes_plan"
    assert "This task was written to realize the trajectory below" in last_prompt(model.seen[0])
    assert lf.NEW_STEP[1] in last_prompt(model.seen[0])
    bad = asyncio.run(check.check(candidate, lf.SEED))  # the model finds only the parent's three steps
    assert not bad.passed and "does not realize its plan" in bad.reasons[0]
    seed = asyncio.run(check.check(load_task(lf.SEED), lf.SEED))
    assert seed.passed and seed.notes == ["a seed: no plan to realize"]
    assert len(model.seen) == 2  # a seed costs no call
