"""The Reviewer: judges a plan against the plan rubric, criterion by criterion, reason before verdict.

Acceptance is computed in code from the verdicts and the rubric's weights (`score`), not taken from the
model, and a verdict list that skips or invents criteria is sent back as a retry.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from envevo.evolve._engine import CriterionVerdict, Proposal, Review
from envevo.llm import Judgement, LLMRuntime, RoleFailed, Rubric, judge_every_criterion, load_prompt, render_task, render_trace, score
from envevo.task import Task


class PlanReview(BaseModel):
    criteria: list[Judgement] = Field(description="every rubric criterion once: reason, then verdict")
    feedback: str = Field(description="what the Proposer should change; a short note when everything passes")


def _request(task: Task, proposal: Proposal) -> str:
    plan = {k: v for k, v in proposal.plan.items() if k in ("rationale", "changes", "edits")}
    return "\n".join([
        f"Direction: {proposal.direction.value}   Effort: {proposal.effort.value}",
        "", "ξ_E (current):", render_trace(proposal.before),
        "", "ξ′ (proposed):", render_trace(proposal.after),
        "", f"Summary: {proposal.summary}",
        "", "Plan:", json.dumps(plan, indent=2, ensure_ascii=False),
        "", "The task's current files:", render_task(task),
    ])


async def review(runtime: LLMRuntime, rubric: Rubric, task: Task, proposal: Proposal, *, lineage: str,
                 generation: int) -> Review:
    prompt = load_prompt("reviewer")
    agent = runtime.agent("reviewer", PlanReview, prompt.instructions.replace("{rubric}", rubric.brief()))
    judge_every_criterion(agent, rubric)

    try:
        out: PlanReview = await runtime.run(agent, _request(task, proposal), role="reviewer", lineage=lineage,
                                            generation=generation)
    except RoleFailed as e:
        return Review(accepted=False, feedback=f"the reviewer gave no usable verdict ({e.reason}); propose again")
    accepted, share = score(rubric, out.criteria)
    verdicts = [CriterionVerdict(name=j.name, reason=j.reason, verdict=j.verdict) for j in out.criteria]
    failed = [f"{j.name}: {j.reason}" for j in out.criteria if j.verdict == "fail"]
    note = out.feedback.strip()
    feedback = note if accepted else "; ".join([*failed, note] if note else failed) or "rejected"
    verdicts.append(CriterionVerdict(name="score", reason=f"weighted pass share {share:.2f} "
                                     f"(threshold {rubric.threshold:.2f}, rubric {rubric.name}@{rubric.version}, "
                                     f"prompt {prompt.tag})", verdict="pass" if accepted else "fail"))
    return Review(accepted=accepted, criteria=verdicts, feedback=feedback)
