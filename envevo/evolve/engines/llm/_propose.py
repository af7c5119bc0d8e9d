"""The Proposer's second job: rewrite ξ_E into ξ′ for a direction and effort, with a plan per component.

Direction semantics and effort bounds are checked here in code (the same checks the loop applies), and a
violating answer goes back to the model as a retry inside the same call, so most bad plans never reach the
Reviewer. Labels the model copied with cosmetic differences (case, spacing, a trailing period) are snapped
back to the original strings first, so "unchanged" pairs compare equal.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry

from envevo.evolve._engine import Proposal
from envevo.llm import LLMRuntime, RoleFailed, load_prompt, render_task, render_trace
from envevo.task import Task
from envevo.trace import Direction, Effort, Step, Trace, check_direction, check_effort, edit_spans


class StepLabel(BaseModel):
    scenario: str
    skill: str


class ComponentChanges(BaseModel):
    instruction: str = Field(description="what changes in instruction.md, or 'unchanged'")
    environment: str = Field(description="what changes in environment/ (Dockerfile, fixtures), or 'unchanged'")
    tests: str = Field(description="what changes in tests/")
    solution: str = Field(description="what changes in solution/solve.sh")


class PlanDraft(BaseModel):
    rationale: str = Field(description="first: why the new version is harder and still solvable and checkable")
    after: list[StepLabel] = Field(min_length=1, description="the complete ξ′, unchanged pairs copied verbatim")
    final: str | None = None
    changes: ComponentChanges
    summary: str = Field(description="one line")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(".").casefold()


def snap(before: Trace, draft: PlanDraft) -> Trace:
    scenarios = {_norm(s.scenario): s.scenario for s in before.steps}
    skills = {_norm(s.skill): s.skill for s in before.steps}
    steps = tuple(Step(scenario=scenarios.get(_norm(s.scenario), s.scenario.strip()),
                       skill=skills.get(_norm(s.skill), s.skill.strip())) for s in draft.after)
    return Trace(goal=before.goal, steps=steps, final=(draft.final or "").strip() or before.final)


def plan_problems(before: Trace, after: Trace, direction: Direction, effort: Effort, draft: PlanDraft) -> list[str]:
    problems = check_direction(before, after, direction) + check_effort(before, after, effort)
    for part in ("tests", "solution"):
        if _norm(getattr(draft.changes, part)) in ("", "unchanged", "none", "no change"):
            problems.append(f"changes.{part} must say what changes: a new ξ always changes the {part}")
    return problems


def edits(before: Trace, after: Trace) -> list[dict[str, Any]]:
    return [{"op": tag, "at": i1 + 1, "before": [s.model_dump() for s in before.steps[i1:i2]],
             "after": [s.model_dump() for s in after.steps[j1:j2]]} for tag, i1, i2, j1, j2 in edit_spans(before, after)]


def _request(task: Task, trace: Trace, direction: Direction, effort: Effort, feedback: list[str]) -> str:
    text = [f"Direction: {direction.value}", f"Effort: {effort.value}", "", "Current trajectory ξ_E:", render_trace(trace)]
    if feedback:
        text += ["", "Feedback on earlier attempts (address every point):", *[f"- {f}" for f in feedback]]
    text += ["", "The task's files:", render_task(task)]
    return "\n".join(text)


async def propose(runtime: LLMRuntime, task: Task, trace: Trace, direction: Direction, effort: Effort,
                  feedback: list[str], *, lineage: str, generation: int) -> Proposal:
    prompt = load_prompt("proposer-plan")
    agent = runtime.agent("proposer", PlanDraft, prompt.instructions)
    last: dict[str, PlanDraft] = {}  # the latest rule-breaking draft

    @agent.output_validator
    def _checked(draft: PlanDraft) -> PlanDraft:
        after = snap(trace, draft)
        problems = plan_problems(trace, after, direction, effort, draft)
        if problems:
            last.update(draft=draft)
            raise ModelRetry("The plan breaks the rules: " + "; ".join(problems) + ". Rewrite ξ′ and the plan.")
        return draft

    meta = {"prompt": prompt.tag, "model": runtime.spec("proposer").label}
    try:
        draft = await runtime.run(agent, _request(task, trace, direction, effort, feedback),
                                  role="proposer", lineage=lineage, generation=generation)
    except RoleFailed as e:
        if "draft" in last:  # out of retries on a rule-breaking plan: hand it on, the loop records why it fails
            draft = last["draft"]
        else:  # a cut, malformed or refused answer: the loop rejects it with this reason (what to fix)
            return Proposal(direction=direction, effort=effort, before=trace, after=trace,
                            summary=f"no usable plan from the proposer: {e.reason}", plan={"error": str(e), **meta},
                            error=f"no usable plan from the proposer: {e.reason}")
    after = snap(trace, draft)
    plan = {"rationale": draft.rationale, "changes": draft.changes.model_dump(), "edits": edits(trace, after), **meta}
    return Proposal(direction=direction, effort=effort, before=trace, after=after, plan=plan, summary=draft.summary)
