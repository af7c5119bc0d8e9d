"""ProceduralEngine: the offline Proposer, Reviewer and Modifier over the scenario–skill catalog."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from envevo.catalog import CatalogPrior, Chain, ChainProblemKind, build_blocks, chain_from_task, chain_problems, derive_seed
from envevo.errors import TaskError
from envevo.evolve._engine import Capability, CriterionVerdict, GenerationContext, Proposal, Review
from envevo.evolve.engines.procedural._operators import apply_pairs, mutate
from envevo.evolve.engines.procedural._quality import quality_check
from envevo.evolve.engines.procedural._residual import residual
from envevo.evolve.engines.procedural._target import WeaknessTarget
from envevo.evolve.engines.procedural._task_from_chain import compose
from envevo.runtime import DEFAULT_ENGINE
from envevo.task import Task
from envevo.trace import Direction, Effort, Trace, check_direction, check_effort, edit_spans
from envevo.verify import RuleRubric

if TYPE_CHECKING:
    from envevo.evolve._engine import EngineClass, TargetableEngine
    from envevo.llm import LLMSettings


def _verdict(name: str, reasons: list[str], ok_reason: str) -> CriterionVerdict:
    return CriterionVerdict(name=name, reason="; ".join(reasons) if reasons else ok_reason,
                            verdict="fail" if reasons else "pass")


class ProceduralEngine:
    """Exact edits of the chain stored in each task's `[metadata.envevo]`; no model calls."""

    name = "procedural"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WEAKNESS_TARGET,
                                                               Capability.OFFLINE_EXTRACTION})

    def __init__(self, prior: CatalogPrior | None = None, target: WeaknessTarget | None = None):
        self.prior = prior or CatalogPrior()
        self.target = target  # weakness-targeted evolution: prefer edits that raise this agent's δ_θ

    @classmethod
    def build(cls, settings: LLMSettings | None = None, *, env: str = DEFAULT_ENGINE,
              rubric_files: Sequence[Path] = ()) -> tuple[ProceduralEngine, list[RuleRubric]]:
        """The registry's builder. The rubric slot is the rule-based quality check (it reads no model or rubric file)."""
        return cls(), [RuleRubric(quality_check)]

    def reference(self) -> CatalogPrior:
        return self.prior

    async def extract_trace(self, task: Task) -> Trace:
        try:
            return chain_from_task(task).trace()
        except TaskError as exc:
            # A user's own task: the way on is a model; another seed is the other.
            raise TaskError(f"task {task.name} was not made by the procedural engine (no chain in [metadata.envevo]), "
                            f"the only kind it evolves; evolve it with a model: `envevo evolve {task.source or task.name} "
                            "--engine llm --model <provider:model>` (docs/llm.md), or start from a procedural seed: "
                            "`envevo seed procedural DIR`") from exc

    async def propose(self, task: Task, trace: Trace, direction: Direction, effort: Effort, feedback: list[str],
                      ctx: GenerationContext) -> Proposal | None:
        chain = chain_from_task(task)
        new = mutate(chain, direction, effort, ctx.rng, self.prior, self.target)
        if new is None:
            return None
        before, after = chain.trace(), new.trace()
        d0, d1 = self.prior.difficulty(before), self.prior.difficulty(after)
        edits: list[dict[str, Any]] = [{"op": tag, "before": [s.model_dump() for s in before.steps[i1:i2]],
                  "after": [s.model_dump() for s in after.steps[j1:j2]], "at": i1}
                 for tag, i1, i2, j1, j2 in edit_spans(before, after)]
        targeted = {}
        if self.target is not None:
            targeted = {"target": {"agent": self.target.agent, "model": self.target.model, "source": self.target.source,
                                   "delta_before": self.target.total(chain.pairs()),
                                   "delta_after": self.target.total(new.pairs())}}
        summary = (f"{Direction(direction).value}/{Effort(effort).value}: " +
                   "; ".join(f"{e['op']} at {e['at'] + 1}: {[tuple(s.values()) for s in e['before']]} -> "
                             f"{[tuple(s.values()) for s in e['after']]}" for e in edits)
                   + f" (D_T {d0.D_T:.2f} -> {d1.D_T:.2f})")
        return Proposal(direction=direction, effort=effort, before=before, after=after, summary=summary,
                        plan={"chain": new.model_dump(mode="json", exclude_none=True), "edits": edits,
                              "residual": residual(chain, new), "D_T_before": d0.D_T, "D_T_after": d1.D_T, **targeted})

    async def review(self, task: Task, proposal: Proposal, ctx: GenerationContext) -> Review:
        criteria: list[CriterionVerdict] = []
        try:
            chain = Chain.model_validate({k: v for k, v in proposal.plan["chain"].items() if k != "final"})
        except Exception as e:
            criteria.append(CriterionVerdict(name="plan", reason=f"the plan holds no valid chain: {e}", verdict="fail"))
            return Review(accepted=False, criteria=criteria, feedback=criteria[0].reason)
        mismatch = [] if chain.trace().steps == proposal.after.steps else ["the chain does not match ξ′"]
        criteria.append(_verdict("plan_matches_trace", mismatch, "the chain realizes ξ′ exactly"))
        problems = chain_problems(chain)
        repeats = {ChainProblemKind.SCENARIO_TWICE, ChainProblemKind.DUPLICATE_STEP}
        criteria.append(_verdict("type_correct", [p.message for p in problems if p.kind not in repeats],
                                 "every step reads the kind of data the previous one writes"))
        criteria.append(_verdict("no_duplicate_step", [p.message for p in problems if p.kind in repeats],
                                 "every step is a distinct pair in its own scenario"))
        criteria.append(_verdict("direction", check_direction(proposal.before, proposal.after, proposal.direction),
                                 f"a pure {proposal.direction.value} edit"))
        criteria.append(_verdict("effort", check_effort(proposal.before, proposal.after, proposal.effort),
                                 f"within {proposal.effort.value} effort"))
        d0, d1 = self.prior.difficulty(proposal.before).D_T, self.prior.difficulty(proposal.after).D_T
        criteria.append(_verdict("difficulty_raised", [] if d1 > d0 else [f"D_T does not rise ({d0:.3f} -> {d1:.3f})"],
                                 f"D_T rises {d0:.3f} -> {d1:.3f}"))
        gen = []
        if not problems:
            try:
                build_blocks(chain)
            except Exception as e:
                gen = [f"the chain cannot be generated: {e}"]
        criteria.append(_verdict("generates", gen, "every block generates"))
        failed = [c for c in criteria if c.verdict == "fail"]
        return Review(accepted=not failed, criteria=criteria, feedback="; ".join(f"{c.name}: {c.reason}" for c in failed))

    async def modify(self, task: Task, proposal: Proposal, feedback: list[str], ctx: GenerationContext) -> Task:
        chain = Chain.model_validate({k: v for k, v in proposal.plan["chain"].items() if k != "final"})
        if feedback:
            # A failed verification asks for another draw of the edited steps, not another edit: the same pairs,
            # with fresh seeds for the new ones (kept steps and kept fixtures stay as they are).
            parent = chain_from_task(task)
            try:
                chain = apply_pairs(parent, chain.pairs(), random.Random(derive_seed(chain.seed, "retry", len(feedback))))
            except RuntimeError:
                pass  # no other draw generates; verify the planned one again
        return compose(chain)


if TYPE_CHECKING:  # mypy holds the class to the contract the registry and the CLI keep to
    _REGISTERED: EngineClass = ProceduralEngine
    _CAPABLE: type[TargetableEngine] = ProceduralEngine
