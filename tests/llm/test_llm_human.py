"""Human review feeds the rubric: verdicts on versions, learned criteria, and the judge reading them later."""

import asyncio

import pytest

from envevo.errors import UserError
from envevo.evolve.engines.llm import task_rubric
from envevo.llm import (
    PROJECT_RUBRIC,
    LLMRuntime,
    LLMSettings,
    append_criteria,
    default_rubric,
    latest_verdicts,
    learn_criteria,
    record_review,
    resolve_version,
    reviews,
)
from envevo.store import LineageStore
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.models import scripted


@pytest.fixture
def store(tmp_path):
    s = LineageStore.open(tmp_path / "run")
    s.create_lineage("log-forensics", load_task(lf.SEED))
    yield s
    s.close()


def test_versions_are_named_the_ways_users_see_them(store):
    v = store.version("log-forensics", 0)
    for ref in ("log-forensics@0", "log-forensics/g00", "log-forensics__g00", v.task_hash[:12]):
        assert resolve_version(store, ref).task_hash == v.task_hash
    with pytest.raises(UserError, match="no lineage 'csv-etl'"):
        resolve_version(store, "csv-etl@1")
    with pytest.raises(UserError, match="has no committed generation 4"):
        resolve_version(store, "log-forensics@4")
    with pytest.raises(UserError, match="use LINEAGE@GENERATION"):
        resolve_version(store, "latest")


def test_reviews_accumulate_and_the_last_verdict_wins(store):
    record_review(store, "log-forensics@0", accept=False, issue="The instruction never says the logs are gzip-compressed.")
    record_review(store, "log-forensics@0", accept=True, reviewer="ana")
    with pytest.raises(UserError, match="a rejection needs the issue"):
        record_review(store, "log-forensics@0", accept=False)
    recorded = reviews(store.run_dir)
    assert [r.verdict for r in recorded] == ["reject", "accept"]
    assert latest_verdicts(recorded)[("log-forensics", 0)].reviewer == "ana"


def test_rubric_learn_turns_issues_into_criteria_that_later_runs_use(store, tmp_path, monkeypatch):
    record_review(store, "log-forensics@0", accept=False, issue="Expected values were typed by hand and one was wrong.")
    record_review(store, "log-forensics@0", accept=False, issue="The tests hard-code a value that the instruction never defines.")
    proposal = {"criteria": [
        {"name": "expected_values_computed", "description": "Expected values in the tests are computed by running the "
         "reference solution or a script on the fixtures, not typed by hand.", "weight": 1.5, "issues": [1]},
        {"name": "typos", "description": "duplicate of an existing criterion", "issues": [2]},
    ]}
    model = scripted(proposal)
    runtime = LLMRuntime(LLMSettings(), models={"judge": model})
    proposed = asyncio.run(learn_criteria(runtime, reviews(store.run_dir), default_rubric("task")))
    assert [c.name for c in proposed] == ["expected_values_computed"]  # known names are dropped
    prompt = str(model.seen[0])
    assert "1. (log-forensics generation 0) Expected values were typed by hand" in prompt
    assert "behavior_in_task_description" in prompt  # the existing rubric, so it does not repeat it

    monkeypatch.chdir(tmp_path)
    append_criteria(PROJECT_RUBRIC, [c.criterion() for c in proposed])
    names = [c.name for c in task_rubric(LLMSettings()).criteria]
    assert names[-1] == "expected_values_computed" and "typos" in names


def test_nothing_to_learn_without_rejections(store):
    record_review(store, "log-forensics@0", accept=True)
    runtime = LLMRuntime(LLMSettings(), models={"judge": scripted()})
    assert asyncio.run(learn_criteria(runtime, reviews(store.run_dir), default_rubric("task"))) == []
