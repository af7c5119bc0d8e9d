"""The rubric verifier: an LLM judge over a candidate's files, in the loop's rubric slot (a TaskVerifier).

Each criterion of the task rubric (the default one, covering Harbor's `check`, plus user rubric files) is
judged reason-first as pass, fail or n/a. Any fail rejects the candidate, and its reason becomes feedback for
the Modifier. A judge that gives no usable verdict also rejects: an unjudged candidate is not verified.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry

from envevo.llm import BudgetExceeded, Judgement, LLMRuntime, RoleFailed, Rubric, check_judgements, load_prompt, render_task
from envevo.task import Task
from envevo.verify import VerifierReport

#: Who a candidate belongs to, by content hash: (lineage, generation), for usage attribution and budgets.
Attribution = Callable[[str], tuple[str | None, int | None]]


class TaskReview(BaseModel):
    criteria: list[Judgement] = Field(description="every rubric criterion once: reason, then verdict")


class RubricJudge:
    name = "rubric"

    def __init__(self, runtime: LLMRuntime, rubric: Rubric, attribution: Attribution | None = None):
        self.runtime = runtime
        self.rubric = rubric
        self.attribution = attribution or (lambda _h: (None, None))

    async def check(self, task: Task, task_dir: Path) -> VerifierReport:
        lineage, generation = self.attribution(task.content_hash())
        over = self.runtime.meter.over_budget(lineage)
        if over is not None:  # the next engine call stops the lineage; do not fail the whole verification here
            return VerifierReport(name=self.name, passed=False, reasons=[f"not judged: {over}"])
        prompt = load_prompt("judge")
        agent = self.runtime.agent("judge", TaskReview, prompt.instructions.replace("{rubric}", self.rubric.brief()))

        @agent.output_validator
        def _complete(out: TaskReview) -> TaskReview:
            problems = check_judgements(self.rubric, out.criteria)
            if problems:
                raise ModelRetry("; ".join(problems))
            return out

        try:
            out: TaskReview = await self.runtime.run(agent, f"Review this task.\n\n{render_task(task)}", role="judge",
                                                     lineage=lineage, generation=generation)
        except RoleFailed as e:
            return VerifierReport(name=self.name, passed=False, reasons=[f"the judge gave no usable verdict: {e}"])
        except BudgetExceeded as e:  # crossed the cap mid-call: reject; the engine's next call ends the lineage
            return VerifierReport(name=self.name, passed=False, reasons=[f"not judged: {e}"])
        failed = [f"{j.name}: {j.reason}" for j in out.criteria if j.verdict == "fail"]
        return VerifierReport(name=self.name, passed=not failed, reasons=failed)
