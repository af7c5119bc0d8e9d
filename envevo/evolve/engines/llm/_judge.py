"""The rubric verifier: an LLM judge over a candidate's files, in the loop's rubric slot (a TaskVerifier).

The rubric is Harbor's default one plus envevo's evolution criteria (envevo/llm/prompts/task_rubric.toml), each
judged reason-first as pass, fail or n/a. The verdict is scored in code (`envevo.llm.score`): a critical criterion
that fails rejects, and so does a weighted pass share below the threshold.

A seed is judged without the evolution criteria; its verdict is recorded but does not gate it (the loop's
`start_lineages`). A candidate is judged against its parent: the judge sees the parent's ξ, the plan's ξ′ and the
diff, and a criterion the parent already failed is excused (reported as a note, not a reason), so a flaw the seed
came with does not reject every child. A judge that gives no usable verdict rejects: an unjudged candidate is not
verified.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from envevo.evolve._engine import Proposal
from envevo.llm import (
    BudgetExceeded,
    Judgement,
    LLMRuntime,
    RoleFailed,
    Rubric,
    judge_every_criterion,
    load_prompt,
    render_task,
    render_trace,
    score,
)
from envevo.task import Task, diff_tasks
from envevo.verify import FindingKind, VerifierReport, finding

#: Who a candidate belongs to, by content hash: (lineage, generation), for usage attribution and budgets.
Attribution = Callable[[str], tuple[str | None, int | None]]
#: The parent and the plan a candidate was made from, by content hash; None for a seed.
Lineage = Callable[[str], "Evolution | None"]

_MAX_DIFF_CHARS = 40_000


@dataclass(frozen=True)
class Evolution:
    parent: Task
    proposal: Proposal


class TaskReview(BaseModel):
    criteria: list[Judgement] = Field(description="every rubric criterion once: reason, then verdict")


def render_diff(parent: Task, candidate: Task, max_chars: int = _MAX_DIFF_CHARS) -> str:
    """The candidate's changes as unified diffs, bounded so a large rewrite cannot crowd out the files."""
    parts, used = [], 0
    for change in diff_tasks(parent, candidate).changes:
        body = change.diff or f"{change.kind} {change.path}"
        if used + len(body) > max_chars:
            parts.append(f"[{change.kind} {change.path}: diff not shown, the size budget is spent]")
            continue
        used += len(body)
        parts.append(body.rstrip("\n"))
    return "\n".join(parts) or "(no file differs)"


def _evolution_brief(ev: Evolution, candidate: Task, excused: dict[str, str]) -> str:
    plan = {k: v for k, v in ev.proposal.plan.items() if k in ("rationale", "changes")}
    lines = [
        f"This task is an evolved candidate: its parent `{ev.parent.name}` made harder in direction "
        f"{ev.proposal.direction.value}, effort {ev.proposal.effort.value}.",
        "", "ξ of the parent:", render_trace(ev.proposal.before),
        "", "ξ′ the plan targets:", render_trace(ev.proposal.after),
        "", f"Plan summary: {ev.proposal.summary}",
        "", "Plan:", json.dumps(plan, indent=2, ensure_ascii=False),
        "", "Diff from the parent to this candidate:", "```diff", render_diff(ev.parent, candidate), "```",
    ]
    if excused:
        lines += ["", "The parent already fails these criteria; judge them on this candidate all the same:"]
        lines += [f"- {name}: {reason}" for name, reason in excused.items()]
    return "\n".join(lines)


class RubricJudge:
    name = "rubric"

    def __init__(self, runtime: LLMRuntime, rubric: Rubric, attribution: Attribution | None = None,
                 lineage: Lineage | None = None):
        self.runtime = runtime
        self.rubric = rubric
        self.attribution = attribution or (lambda _h: (None, None))
        self.lineage = lineage or (lambda _h: None)
        self._failed: dict[str, dict[str, str]] = {}  # content hash -> criteria it failed, with the reasons

    async def check(self, task: Task, task_dir: Path) -> VerifierReport:
        key = task.content_hash()
        lineage, generation = self.attribution(key)
        over = self.runtime.meter.over_budget(lineage)
        if over is not None:  # the next engine call stops the lineage; do not fail the whole verification here
            return self._not_judged(str(over))
        ev = self.lineage(key)
        try:
            excused: dict[str, str] = {}
            if ev is not None:
                parent_failed = await self._failures(ev.parent, lineage, generation)
                evolution = {c.name for c in self.rubric.criteria if c.evolution}
                excused = {n: r for n, r in parent_failed.items() if n not in evolution}
            rubric = self.rubric if ev is not None else self.rubric.for_seed()
            out = await self._judge(task, rubric, ev, excused, lineage, generation)
        except RoleFailed as e:
            return VerifierReport(name=self.name, passed=False,
                                  findings=[finding(self.name, f"the judge gave no usable verdict: {e.reason}")])
        except BudgetExceeded as e:  # crossed the cap mid-call: reject; the engine's next call ends the lineage
            return self._not_judged(str(e))
        self._failed[key] = {j.name: j.reason for j in out.criteria if j.verdict == "fail"}
        accepted, share = score(rubric, out.criteria, excused=excused)
        critical = {c.name for c in rubric.criteria if c.required}
        reasons = [f"{j.name}{' (critical)' if j.name in critical else ''}: {j.reason}"
                   for j in out.criteria if j.verdict == "fail" and j.name not in excused]
        notes = [f"{j.name}: failed by the parent too, so not held against this candidate: {j.reason}"
                 for j in out.criteria if j.verdict == "fail" and j.name in excused]
        tally = f"rubric score {share:.2f} (threshold {rubric.threshold:.2f}, {rubric.name}@{rubric.version})"
        if accepted:  # non-critical failures within the threshold: worth knowing, not a rejection
            notes += [f"failed, within the threshold: {r}" for r in reasons] + [tally]
            return VerifierReport(name=self.name, passed=True, notes=notes)
        below = share < rubric.threshold - 1e-9
        return VerifierReport(name=self.name, passed=False, notes=notes,
                              findings=[finding(self.name, r) for r in
                                        [*reasons, tally + (": below the threshold" if below else "")]])

    def _not_judged(self, why: str) -> VerifierReport:
        """No verdict (the budget ran out): inconclusive, neither a pass nor a failing of the task."""
        return VerifierReport(name=self.name, passed=False, inconclusive=True,
                              findings=[finding(self.name, f"not judged: {why}", FindingKind.INCONCLUSIVE)])

    async def _failures(self, parent: Task, lineage: str | None, generation: int | None) -> dict[str, str]:
        """The criteria the parent failed: from this judge's own verdict on it, or judged now (a resumed run)."""
        key = parent.content_hash()
        if key not in self._failed:
            out = await self._judge(parent, self.rubric.for_seed(), None, {}, lineage, generation)
            self._failed[key] = {j.name: j.reason for j in out.criteria if j.verdict == "fail"}
        return self._failed[key]

    async def _judge(self, task: Task, rubric: Rubric, ev: Evolution | None, excused: dict[str, str],
                     lineage: str | None, generation: int | None) -> TaskReview:
        prompt = load_prompt("judge")
        agent = self.runtime.agent("judge", TaskReview, prompt.instructions.replace("{rubric}", rubric.brief()))
        judge_every_criterion(agent, rubric)

        text = "Review this task."
        if ev is not None:
            text += "\n\n" + _evolution_brief(ev, task, excused)
        text += f"\n\nThe task's files:\n\n{render_task(task)}"
        out: TaskReview = await self.runtime.run(agent, text, role="judge", lineage=lineage, generation=generation)
        return out
