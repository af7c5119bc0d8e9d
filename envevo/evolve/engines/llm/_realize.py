"""A candidate must realize its plan: ξ is re-extracted from the candidate's files and compared with ξ′.

The check is a TaskVerifier (`realizes_plan`) beside the oracle, invalid-test and rubric verifiers, so its reason
goes back to the Modifier like theirs. It rejects when the re-extracted ξ̂ is not itself an evolution of the
parent's ξ in the plan's direction within the effort bound (say, the new step is in the instruction but neither
tested nor solved, so no quote backs it), or when ξ̂ differs from ξ′ by more than the effort bound allows. A
candidate that passes is committed with ξ̂, what its files show, so D_T measures the task rather than the plan.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from envevo.evolve.engines.llm._judge import Evolution, Lineage
from envevo.llm import BudgetExceeded, RoleFailed
from envevo.task import Task
from envevo.trace import Trace, check_direction, check_effort, edit_spans
from envevo.verify import VerifierReport, finding

#: Re-extracts ξ of a candidate, preferring the wording of ξ′; raises RoleFailed when no usable ξ comes back.
Reextract = Callable[[Task, Evolution], Awaitable[Trace]]


def _pairs(trace: Trace, i: int, j: int) -> str:
    return "; ".join(f"{s.scenario} | {s.skill}" for s in trace.steps[i:j]) or "nothing"


def mismatch(planned: Trace, realized: Trace) -> list[str]:
    """Where the candidate's ξ̂ differs from the plan's ξ′, in words."""
    return [f"planned {_pairs(planned, i1, i2)!r}, the files show {_pairs(realized, j1, j2)!r}"
            for _tag, i1, i2, j1, j2 in edit_spans(planned, realized)]


def realization_problems(ev: Evolution, realized: Trace) -> list[str]:
    """Why the candidate does not realize its plan; empty when ξ̂ is close enough to ξ′."""
    p = ev.proposal
    if realized.steps == p.after.steps:
        return []
    problems = check_direction(p.before, realized, p.direction)
    if not problems:
        problems = [m for m in check_effort(p.before, realized, p.effort) if m != "the plan does not change ξ"]
    if not problems and check_effort(p.after, realized, p.effort):
        problems = [f"it differs from ξ′ by more than {p.effort.value} effort allows"]
    if not problems:
        return []
    return [f"the candidate does not realize its plan: ξ re-extracted from its files (L={realized.L}) is not the plan's "
            f"ξ′ (L={p.after.L}): {'; '.join(mismatch(p.after, realized))}; {'; '.join(problems)}. Make the instruction "
            "ask for, the tests check and the solution perform every step of ξ′"]


class RealizesPlan:
    """The `realizes_plan` verifier; seeds (no plan) pass it untouched."""

    name = "realizes_plan"

    def __init__(self, lineage: Lineage, reextract: Reextract):
        self.lineage = lineage
        self.reextract = reextract

    async def check(self, task: Task, task_dir: Path) -> VerifierReport:
        ev = self.lineage(task.content_hash())
        if ev is None:
            return VerifierReport(name=self.name, passed=True, notes=["a seed: no plan to realize"])
        try:
            realized = await self.reextract(task, ev)
        except (RoleFailed, BudgetExceeded) as e:
            return VerifierReport(name=self.name, passed=False,
                                  findings=[finding(self.name, f"ξ could not be re-extracted from the candidate: {e}")])
        problems = realization_problems(ev, realized)
        notes = [] if problems else [f"ξ re-extracted: {m}" for m in mismatch(ev.proposal.after, realized)]
        return VerifierReport(name=self.name, passed=not problems, notes=notes,
                              findings=[finding(self.name, p) for p in problems])
