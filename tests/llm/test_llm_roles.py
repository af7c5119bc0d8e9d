"""The LLM engine's roles with scripted pydantic-ai models: extraction, Proposer, Reviewer, Modifier, judge."""

import asyncio
import random

import pytest

from envevo.evolve import GenerationContext
from envevo.evolve.engines.llm import LLMEngine, RubricJudge, extract, trace_from_metadata
from envevo.llm import CandidateFailed, LLMRuntime, LLMSettings, default_rubric, prompt_versions
from envevo.task import load_task
from envevo.trace import Direction, Effort, Step, Trace, check_direction, check_effort
from tests.fakes import log_forensics as lf
from tests.fakes.models import Calls, ScriptExhausted, last_prompt, scripted, tool_returns


def runtime(**roles):
    models = {r: roles.get(r) or scripted(name=f"idle-{r}") for r in ("proposer", "reviewer", "modifier", "judge")}
    return LLMRuntime(LLMSettings(output_retries=2), models=models)


def seed():
    return load_task(lf.SEED)


def seed_trace() -> Trace:
    return Trace(goal=lf.GOAL, final=lf.FINAL, steps=tuple(Step(scenario=s, skill=k) for s, k in lf.STEPS))


def ctx(tmp_path, g=1):
    return GenerationContext(lineage="log-forensics", generation=g, rng=random.Random(0), workdir=tmp_path)


def run(coro):
    return asyncio.run(coro)


# ---- extraction ---------------------------------------------------------------------------------------------
def test_extraction_returns_the_trace_with_verified_evidence():
    rt = runtime(proposer=scripted(lf.extraction()))
    out = run(extract(rt, seed()))
    assert out.trace() == seed_trace()
    assert all(step.evidence for step in out.steps)


def test_a_quote_not_in_the_files_is_sent_back_and_fixed():
    bad = lf.extraction()
    bad["steps"][1]["evidence"] = [{"file": "instruction.md", "quote": "the attacker used a VPN"}]
    model = scripted(bad, lf.extraction())
    out = run(extract(runtime(proposer=model), seed()))
    assert out.trace().L == 3
    assert "does not appear in instruction.md" in last_prompt(model.seen[1])


def test_evidence_from_the_environment_is_not_evidence():
    bad = lf.extraction()
    bad["steps"][0]["evidence"] = [{"file": "environment/gen_logs.py", "quote": "import gzip"}]
    model = scripted(bad, lf.extraction())
    run(extract(runtime(proposer=model), seed()))
    assert "is not the instruction, a solution file or a test file" in last_prompt(model.seen[1])


def test_engine_extracts_a_seed_once_and_reads_evolved_versions_from_metadata(tmp_path):
    model = scripted(lf.extraction())
    engine = LLMEngine(runtime(proposer=model))
    task = seed()
    assert run(engine.extract_trace(task)) == run(engine.extract_trace(seed())) == seed_trace()
    assert len(model.seen) == 1  # cached by content hash
    # A version carrying its ξ in metadata needs no call, as long as its files still match.
    after = Trace(goal=lf.GOAL, final=lf.FINAL, steps=(*seed_trace().steps, Step(scenario=lf.NEW_STEP[0], skill=lf.NEW_STEP[1])))
    from envevo.evolve.engines.llm import files_digest
    from envevo.evolve.engines.llm._engine import _trace_meta

    task.update_envevo_metadata(llm={"trace": _trace_meta(after), "trace_of": files_digest(task)})
    assert trace_from_metadata(task) == after
    task.write("instruction.md", "edited by hand")
    assert trace_from_metadata(task) is None


# ---- Proposer -----------------------------------------------------------------------------------------------
def test_proposal_realizes_direction_and_effort_with_a_plan_per_component(tmp_path):
    rt = runtime(proposer=scripted(lf.plan(clarified=True)))
    engine = LLMEngine(rt)
    p = run(engine.propose(seed(), seed_trace(), Direction.LENGTH, Effort.HIGH, [], ctx(tmp_path)))
    assert p.after.L == 4 and p.after.steps[:3] == seed_trace().steps
    assert check_direction(p.before, p.after, Direction.LENGTH) == [] and check_effort(p.before, p.after, Effort.HIGH) == []
    assert set(p.plan["changes"]) == {"instruction", "environment", "tests", "solution"}
    assert p.plan["edits"] == [{"op": "insert", "at": 4, "before": [],
                                "after": [{"scenario": lf.NEW_STEP[0], "skill": lf.NEW_STEP[1]}]}]
    assert p.plan["prompt"] == prompt_versions()["proposer-plan"]


def test_effort_violating_plan_is_retried_inside_propose_with_the_reason(tmp_path):
    two_spans = lf.plan(clarified=True)
    steps = [dict(s) for s in two_spans["after"]]
    steps.insert(1, {"scenario": "an extra scenario", "skill": "an extra skill"})  # a second, separate insertion
    two_spans["after"] = steps
    model = scripted(two_spans, lf.plan(clarified=True))
    p = run(LLMEngine(runtime(proposer=model)).propose(seed(), seed_trace(), Direction.LENGTH, Effort.HIGH, [], ctx(tmp_path)))
    assert p.after.L == 4
    assert "high effort allows one contiguous span" in last_prompt(model.seen[1])


def test_a_scenario_plan_that_changes_the_skill_is_sent_back(tmp_path):
    bad = lf.plan(clarified=True)
    bad["after"] = [{"scenario": "Windows event logs (EVTX)", "skill": "something else entirely"},
                    *[{"scenario": s, "skill": k} for s, k in lf.STEPS[1:]]]
    good = dict(bad, after=[{"scenario": "Windows event logs (EVTX)", "skill": lf.STEPS[0][1]},
                            *[{"scenario": s, "skill": k} for s, k in lf.STEPS[1:]]])
    model = scripted(bad, good)
    p = run(LLMEngine(runtime(proposer=model)).propose(seed(), seed_trace(), Direction.SCENARIO, Effort.LOW, [], ctx(tmp_path)))
    assert p.after.steps[0] == Step(scenario="Windows event logs (EVTX)", skill=lf.STEPS[0][1])
    assert "keep the skill" in last_prompt(model.seen[1])


def test_copied_labels_with_cosmetic_differences_are_snapped_to_the_originals(tmp_path):
    sloppy = lf.plan(clarified=True)
    sloppy["after"][0] = {"scenario": lf.STEPS[0][0].upper() + ".", "skill": "  " + lf.STEPS[0][1]}
    engine = LLMEngine(runtime(proposer=scripted(sloppy)))
    p = run(engine.propose(seed(), seed_trace(), Direction.LENGTH, Effort.HIGH, [], ctx(tmp_path)))
    assert p.after.steps[:3] == seed_trace().steps


def test_a_refusing_proposer_yields_an_unchanged_plan_the_loop_rejects_with_the_reason(tmp_path):
    refusal = "I'm sorry, but I can't help with making security tasks harder."
    model = scripted(refusal, refusal, refusal, refusal)
    p = run(LLMEngine(runtime(proposer=model)).propose(seed(), seed_trace(), Direction.SKILL, Effort.HIGH, [], ctx(tmp_path)))
    assert p.after == p.before
    assert "no usable plan from the proposer" in p.summary and p.plan["error"]
    assert check_effort(p.before, p.after, Effort.HIGH) == ["the plan does not change ξ"]


def test_the_stored_reasons_name_the_role_once(tmp_path):
    """Not "no usable plan from the proposer: proposer: …" (issue 25): the sentence already names the role."""
    refusal = "I'm sorry, but I can't help with that."
    p = run(LLMEngine(runtime(proposer=scripted(*[refusal] * 4))).propose(
        seed(), seed_trace(), Direction.SKILL, Effort.HIGH, [], ctx(tmp_path)))
    assert p.error is not None and p.error.count("proposer") == 1 and p.summary.count("proposer") == 1
    review = run(LLMEngine(runtime(reviewer=scripted(*[refusal] * 4))).review(
        seed(), run(LLMEngine(runtime(proposer=scripted(lf.plan(clarified=True)))).propose(
            seed(), seed_trace(), Direction.LENGTH, Effort.HIGH, [], ctx(tmp_path))), ctx(tmp_path)))
    assert not review.accepted and review.feedback.count("reviewer") == 1


def test_feedback_reaches_the_proposer(tmp_path):
    model = scripted(lf.plan(clarified=True))
    run(LLMEngine(runtime(proposer=model)).propose(seed(), seed_trace(), Direction.LENGTH, Effort.HIGH,
                                                   ["verifiable_unambiguous: say the time format"], ctx(tmp_path)))
    assert "verifiable_unambiguous: say the time format" in last_prompt(model.seen[0])


# ---- Reviewer -----------------------------------------------------------------------------------------------
def _proposal(tmp_path):
    rt = runtime(proposer=scripted(lf.plan(clarified=False)))
    return run(LLMEngine(rt).propose(seed(), seed_trace(), Direction.LENGTH, Effort.HIGH, [], ctx(tmp_path)))


def test_reviewer_rejects_with_the_failed_criteria_then_accepts(tmp_path):
    proposal = _proposal(tmp_path)
    engine = LLMEngine(runtime(reviewer=scripted(lf.plan_review(accept=False), lf.plan_review(accept=True))))
    rejected = run(engine.review(seed(), proposal, ctx(tmp_path)))
    assert not rejected.accepted
    assert rejected.feedback.startswith("verifiable_unambiguous:") and "YYYY-MM-DDTHH:MM:SSZ" in rejected.feedback
    assert [c.name for c in rejected.criteria][:6] == lf.CRITERIA  # reason before verdict, every criterion
    accepted = run(engine.review(seed(), proposal, ctx(tmp_path)))
    assert accepted.accepted and accepted.criteria[-1].name == "score"


def test_a_non_required_failure_can_still_pass_the_weighted_threshold(tmp_path):
    review = lf.plan_review(accept=True)
    for c in review["criteria"]:
        if c["name"] == "consistent_components":  # weight 1 of 8.5: share 0.88 >= 0.8
            c["verdict"] = "fail"
    engine = LLMEngine(runtime(reviewer=scripted(review)))
    assert run(engine.review(seed(), _proposal(tmp_path), ctx(tmp_path))).accepted


def test_a_review_that_skips_criteria_is_sent_back(tmp_path):
    partial = lf.plan_review(accept=True)
    partial["criteria"] = partial["criteria"][:4]
    model = scripted(partial, lf.plan_review(accept=True))
    assert run(LLMEngine(runtime(reviewer=model)).review(seed(), _proposal(tmp_path), ctx(tmp_path))).accepted
    assert "missing: consistent_components, not_trivial_renaming" in last_prompt(model.seen[1])


def test_a_reviewer_with_no_usable_answer_rejects_and_says_so(tmp_path):
    model = scripted("no.", "no.", "no.")
    review = run(LLMEngine(runtime(reviewer=model)).review(seed(), _proposal(tmp_path), ctx(tmp_path)))
    assert not review.accepted and "the reviewer gave no usable verdict" in review.feedback


# ---- Modifier -----------------------------------------------------------------------------------------------
def _accepted(tmp_path):
    rt = runtime(proposer=scripted(lf.plan(clarified=True)))
    return run(LLMEngine(rt).propose(seed(), seed_trace(), Direction.LENGTH, Effort.HIGH, [], ctx(tmp_path)))


def _edits_without_container():
    turns = [t for t in lf.modifier_turns() if t[0][0] != "run_in_container"]
    return [Calls(*t) for t in turns] + [lf.MODIFIER_SUMMARY]


def test_modifier_edits_the_task_through_its_tools_and_records_the_trace(tmp_path):
    proposal = _accepted(tmp_path)
    model = scripted(*_edits_without_container())
    engine = LLMEngine(runtime(modifier=model))
    candidate = run(engine.modify(seed(), proposal, [], ctx(tmp_path)))
    assert candidate.read_text("instruction.md") == lf.new_instruction()
    assert candidate.read_text("tests/test_outputs.py") == lf.new_tests()
    assert candidate.read_text("solution/solve.sh") == lf.new_solution()
    assert candidate.files["solution/solve.sh"].executable
    assert candidate.name == "log-forensics"
    assert trace_from_metadata(candidate) == proposal.after
    meta = candidate.envevo_metadata["llm"]
    assert meta["prompts"] == prompt_versions() and meta["direction"] == "length"
    # The write outside the task dir was refused, told to the model, and nothing landed outside.
    returns = tool_returns(model.seen[-1])
    assert any("would escape the task directory" in r for r in returns)
    assert not (tmp_path / "notes.txt").exists() and not (tmp_path.parent / "notes.txt").exists()
    # Its ξ is known without a model call.
    assert run(engine.extract_trace(candidate)) == proposal.after


@pytest.mark.parametrize("path", ["/etc/passwd", "../../x", "tests/../../x", "C:/x"])
def test_the_workspace_refuses_paths_outside_the_task(tmp_path, path):
    from envevo.evolve.engines.llm import Workspace

    (tmp_path / "task").mkdir()
    ws = Workspace(tmp_path / "task")
    assert ws.write(path, "x").startswith("error:")
    assert ws.read(path).startswith("error:") and ws.delete(path).startswith("error:")
    assert len(ws.refused) == 3


def test_the_workspace_refuses_symlinks_and_oversized_writes(tmp_path):
    from envevo.evolve.engines.llm import Workspace

    root = tmp_path / "task"
    (root / "tests").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    (root / "tests" / "evil.py").symlink_to(tmp_path / "secret.txt")
    ws = Workspace(root, max_write_bytes=100)
    assert "symlink" in ws.write("link/x.txt", "x")
    assert "symlink" in ws.read("tests/evil.py")
    assert "write limit" in ws.write("big.txt", "x" * 101)
    assert "not be valid TOML" in ws.write("task.toml", "this is = = not toml")
    assert "cannot be deleted" in ws.delete("task.toml")
    assert not (tmp_path / "outside" / "x.txt").exists()
    assert ws.write("tests/ok.sh", "echo ok").startswith("wrote tests/ok.sh") and (root / "tests/ok.sh").stat().st_mode & 0o111


def test_a_modifier_that_changes_nothing_fails_the_candidate(tmp_path):
    model = scripted(Calls(("list_files", {})), {"summary": "looked around"})
    with pytest.raises(CandidateFailed, match="changed nothing"):
        run(LLMEngine(runtime(modifier=model)).modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))


def test_a_modifier_that_breaks_the_task_fails_the_candidate(tmp_path):
    model = scripted(Calls(("delete_file", {"path": "tests"})), {"summary": "removed the tests"})
    with pytest.raises(CandidateFailed, match="invalid task.*tests/test.sh"):
        run(LLMEngine(runtime(modifier=model)).modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))


def test_a_retry_after_verifier_feedback_continues_from_the_previous_draft(tmp_path):
    proposal = _accepted(tmp_path)
    first = scripted(Calls(("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()})), {"summary": "s"})
    engine = LLMEngine(runtime(modifier=first))
    run(engine.modify(seed(), proposal, [], ctx(tmp_path)))
    (tmp_path / "draft-1-trials" / "job").mkdir(parents=True)  # the Modifier's own verifier runs sit beside drafts

    def sees_previous(messages, info):
        assert "oracle: run 1/1: the reference solution scored 0.0" in last_prompt(messages)
        return Calls(("read_file", {"path": "solution/solve.sh"}))

    second = scripted(sees_previous, Calls(("write_file", {"path": "tests/test_outputs.py", "content": lf.new_tests()})),
                      {"summary": "tests"})
    engine = LLMEngine(runtime(modifier=second))
    feedback = ["oracle: run 1/1: the reference solution scored 0.0, not 1.0"]
    candidate = run(engine.modify(seed(), proposal, feedback, ctx(tmp_path)))
    assert candidate.read_text("solution/solve.sh") == lf.new_solution()  # kept from draft-1
    assert "Step 4" in tool_returns(second.seen[1])[0]
    assert sorted(p.name for p in tmp_path.glob("draft-*")) == ["draft-1", "draft-1-trials", "draft-2"]


class FakeShell:
    """The ContainerShell interface: one session per draft, with the facts the prompt states."""

    def __init__(self, on_run=None):
        self.calls, self.sessions, self.on_run = [], [], on_run

    def session(self, task_dir):
        shell = self

        class Session:
            closed = False

            async def __aenter__(self):
                return self

            async def __aexit__(self, *exc):
                self.closed = True

            def facts(self):
                from envevo.evolve.engines.llm import ShellFacts

                return ShellFacts(timeout_sec=77, network="no-network")

            async def run(self, command, **kw):
                from envevo.evolve.engines.llm import CommandResult

                shell.calls.append((task_dir, command, kw))
                out = await shell.on_run(task_dir, command) if shell.on_run else "customers\n"
                return CommandResult(exit_code=0, output=out)

        self.sessions.append(Session())
        return self.sessions[-1]


def test_modifier_tools_reach_the_container_and_the_verifiers(tmp_path):
    verified = []

    async def fake_verify(self, task_dir, trials_dir):
        verified.append(task_dir)
        return "PASSED"

    model = scripted(Calls(("run_in_container", {"command": "ls /app", "mount_solution": True})),
                     Calls(("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()})),
                     Calls(("run_verifiers", {})), {"summary": "done"})
    shell = FakeShell()
    engine = LLMEngine(runtime(modifier=model), shell=shell)
    engine._verify = fake_verify.__get__(engine)
    run(engine.modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    (task_dir, command, kw), = shell.calls
    assert task_dir == tmp_path / "draft-1" and command == "ls /app" and kw["upload_solution"] is True
    assert verified == [tmp_path / "draft-1"]
    assert tool_returns(model.seen[-1])[-1] == "PASSED"
    # One sandbox for the draft, closed when the Modifier's run ended; the prompt stated its facts.
    (session,) = shell.sessions
    assert session.closed
    instructions = model.seen[0][0].instructions
    assert "times out after 77 s" in instructions and "no internet access" in instructions
    assert "State persists between your commands" in instructions and "/logs/verifier exists" in instructions
    assert "Without a shell" not in instructions and "{" not in instructions


def test_modifier_commands_and_edits_of_one_turn_run_in_order(tmp_path):
    seen = []

    async def on_run(task_dir, command):
        before = (task_dir / "solution/solve.sh").read_text()
        await asyncio.sleep(0.2)  # a write called after this command must not land while it runs
        assert (task_dir / "solution/solve.sh").read_text() == before
        seen.append((command, before == lf.new_solution()))
        return "ok\n"

    model = scripted(Calls(("run_in_container", {"command": "first"}),
                           ("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()}),
                           ("run_in_container", {"command": "second"})),
                     {"summary": "done"})
    shell = FakeShell(on_run)
    engine = LLMEngine(runtime(modifier=model), shell=shell, modifier_verifies=False)
    run(engine.modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    assert seen == [("first", False), ("second", True)]


def test_the_session_is_closed_when_the_modifier_fails(tmp_path):
    model = scripted(Calls(("run_in_container", {"command": "ls"})), name="modifier")  # then the script runs out
    shell = FakeShell()
    with pytest.raises(ScriptExhausted):
        run(LLMEngine(runtime(modifier=model), shell=shell, modifier_verifies=False)
            .modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    assert [s.closed for s in shell.sessions] == [True]


def test_without_a_shell_the_prompt_says_there_is_none(tmp_path):
    tools = []
    first, *rest = _edits_without_container()

    def look(messages, info):
        tools.extend(t.name for t in info.function_tools)
        return first

    model = scripted(look, *rest)
    run(LLMEngine(runtime(modifier=model)).modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    instructions = model.seen[0][0].instructions
    assert "You have no shell in this run" in instructions and "State persists" not in instructions
    assert "write_file" in tools and "run_in_container" not in tools


# ---- judge --------------------------------------------------------------------------------------------------
def test_judge_passes_a_clean_task_and_fails_on_a_failed_critical_criterion(tmp_path):
    judge = RubricJudge(runtime(judge=scripted(lf.task_review(), lf.task_review(fail="tests_or_solution_in_image"))),
                        default_rubric("task"))
    ok = run(judge.check(seed(), lf.SEED))
    assert ok.passed and ok.name == "rubric" and ok.reasons == []
    bad = run(judge.check(seed(), lf.SEED))
    assert not bad.passed and bad.reasons[0].startswith("tests_or_solution_in_image (critical):")


def test_judge_without_a_usable_verdict_rejects(tmp_path):
    judge = RubricJudge(runtime(judge=scripted("?", "?", "?")), default_rubric("task"))
    report = run(judge.check(seed(), lf.SEED))
    assert not report.passed and "the judge gave no usable verdict" in report.reasons[0]


def test_judge_sees_user_rubric_criteria(tmp_path):
    from envevo.llm import load_rubric

    extra = tmp_path / "extra.toml"
    extra.write_text('[[criteria]]\nname = "logs_read_only"\ndescription = "Inputs are read-only."\n')
    rubric = default_rubric("task").merged([load_rubric(extra)])

    def answer(messages, info):
        assert "logs_read_only" in str(messages[0])  # in the judge's instructions
        review = lf.task_review()
        review["criteria"].append({"name": "logs_read_only", "reason": "chmod a-w in the Dockerfile", "verdict": "pass"})
        return review

    assert run(RubricJudge(runtime(judge=scripted(answer)), rubric).check(seed(), lf.SEED)).passed


def test_judge_does_not_spend_past_a_lineage_budget(tmp_path):
    model = scripted(lf.task_review())
    rt = runtime(judge=model)
    rt.meter.max_tokens = 10
    rt.meter.preload("log-forensics", 11, 0.0)
    task = seed()
    judge = RubricJudge(rt, default_rubric("task"), lambda h: ("log-forensics", 1) if h == task.content_hash() else (None, None))
    report = run(judge.check(task, lf.SEED))
    assert not report.passed and "not judged" in report.reasons[0] and "--max-tokens" in report.reasons[0]
    assert model.seen == []
