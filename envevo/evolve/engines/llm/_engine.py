"""LLMEngine: the paper's Proposer, Reviewer and Modifier as LLM agents, behind the loop's Engine protocol.

A candidate's ξ is re-extracted from its files by the `realizes_plan` verifier and compared with the ξ′ its plan
targeted (_realize.py); the loop commits the re-extracted ξ. The plan's ξ′ is written into the version's
`[metadata.envevo.llm]` with a digest of the files it describes, and `extract_trace` reads it back for a task
from an earlier process while the files still match (no model call); seeds and hand-edited tasks are extracted
afresh. Extractions are cached in memory by content hash, so a task is extracted once per process however often
the CLI and the loop ask.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from envevo.errors import TaskError
from envevo.evolve._engine import Capability, GenerationContext, Proposal, Review
from envevo.evolve.engines.llm import _extract, _modify, _propose, _review
from envevo.evolve.engines.llm._judge import Evolution, RubricJudge
from envevo.evolve.engines.llm._prior import LabelPrior
from envevo.evolve.engines.llm._realize import RealizesPlan
from envevo.evolve.engines.llm._sandbox import ContainerShell
from envevo.harden import lost_hardening
from envevo.llm import (
    CandidateFailed,
    ExtractionFailed,
    LLMRuntime,
    LLMSettings,
    PerLoop,
    RoleFailed,
    Rubric,
    attach_store,
    default_rubric,
    prompt_versions,
)
from envevo.runtime import DEFAULT_ENGINE
from envevo.task import Task, load_task
from envevo.trace import Direction, Effort, Step, Trace
from envevo.verify import InvalidTestVerifier, OracleVerifier, verify_tasks

if TYPE_CHECKING:
    from envevo.evolve._engine import EngineClass, ModelEngine
    from envevo.store import LineageStore


def files_digest(task: Task) -> str:
    """What ξ describes: every file but task.toml (which holds the metadata itself)."""
    h = hashlib.sha256()
    for path in sorted(task.files):
        f = task.files[path]
        h.update(f"{path}\0{int(f.executable)}\0".encode() + f.data + b"\0")
    return h.hexdigest()


def _trace_meta(trace: Trace) -> dict[str, Any]:
    out: dict[str, Any] = {"goal": trace.goal, "steps": [s.model_dump() for s in trace.steps]}
    if trace.final:
        out["final"] = trace.final
    return out


def trace_from_metadata(task: Task) -> Trace | None:
    meta = task.envevo_metadata.get("llm") or {}
    if not meta.get("trace") or meta.get("trace_of") != files_digest(task):
        return None
    t = meta["trace"]
    try:
        return Trace(goal=t["goal"], final=t.get("final"), steps=tuple(Step(**s) for s in t["steps"]))
    except (KeyError, TypeError, ValueError):
        return None


def _without_meta(task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
    config = {k: v for k, v in task.config.items() if k != "metadata"}
    meta = {k: v for k, v in (task.config.get("metadata") or {}).items() if k != "envevo"}
    return task.files, {"config": config, "metadata": meta}


class LLMEngine:
    name = "llm"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.USES_LLM})

    def __init__(
        self,
        runtime: LLMRuntime,
        *,
        plan_rubric: Rubric | None = None,
        task_rubric: Rubric | None = None,
        shell: ContainerShell | None = None,
        env: str = DEFAULT_ENGINE,
        modifier_verifies: bool = True,
    ):
        self.runtime = runtime
        self.plan_rubric = plan_rubric or default_rubric("plan")
        self.task_rubric = task_rubric or default_rubric("task")
        self.shell = shell
        self.env = env
        self.modifier_verifies = modifier_verifies
        self.prior = LabelPrior()
        self._traces: dict[str, Trace] = {}
        self._owners: dict[str, tuple[str, int]] = {}
        runtime.owner = lambda h: self._owners.get(h, (None, None))  # the hacker bills the candidate's lineage
        self._evolutions: dict[str, Evolution] = {}  # candidate hash -> its parent and plan
        self._judge: RubricJudge | None = None
        self._gate = PerLoop(lambda: asyncio.Semaphore(1))  # the Modifier's own verifier runs, one at a time

    @classmethod
    def build(cls, settings: LLMSettings | None, *, env: str = DEFAULT_ENGINE,
              rubric_files: Sequence[Path] = ()) -> tuple[LLMEngine, list[RubricJudge | RealizesPlan]]:
        """The registry's builder: `build_llm_engine` on `settings` (the defaults when None)."""
        from envevo.evolve.engines.llm._factory import build_llm_engine  # it imports this module

        return build_llm_engine(settings or LLMSettings(), env=env, rubric_files=rubric_files)

    # ---- wiring -----------------------------------------------------------------------------------------
    def reference(self) -> LabelPrior:
        return self.prior

    def judge(self) -> RubricJudge:
        """The rubric verifier for the loop's `checks`, sharing this engine's models, meter and attribution, and
        judging each candidate against the parent and plan it was made from."""
        if self._judge is None:
            self._judge = RubricJudge(self.runtime, self.task_rubric, lambda h: self._owners.get(h, (None, None)),
                                      self._evolutions.get)
        return self._judge

    def plan_check(self) -> RealizesPlan:
        """The `realizes_plan` verifier for the loop's `checks`: ξ re-extracted from a candidate against its ξ′."""
        return RealizesPlan(self._evolutions.get, self._reextract)

    def checks(self) -> list[RubricJudge | RealizesPlan]:
        return [self.judge(), self.plan_check()]

    async def preflight(self) -> None:
        await self.runtime.preflight()

    def attach_store(self, store: LineageStore) -> None:
        """Write every response's usage to the store, and start budgets from what it already recorded."""
        attach_store(self.runtime.meter, store)

    # ---- Engine protocol -------------------------------------------------------------------------------------
    async def extract_trace(self, task: Task) -> Trace:
        key = task.content_hash()
        if key not in self._traces:
            trace = trace_from_metadata(task)
            if trace is None:
                try:
                    trace = (await _extract.extract(self.runtime, task)).trace()
                except RoleFailed as e:
                    raise ExtractionFailed(f"no usable ξ for task {task.name}: {e}") from e
            self._traces[key] = trace
        return self._traces[key]

    async def _reextract(self, candidate: Task, ev: Evolution) -> Trace:
        """ξ of a candidate from its files, worded like ξ′ where they agree; what the loop then commits."""
        lineage, generation = self._owners.get(candidate.content_hash(), (None, None))
        out = await _extract.extract(self.runtime, candidate, lineage=lineage, generation=generation, prefer=ev.proposal.after)
        trace = out.trace(prefer=ev.proposal.after)
        self._traces[candidate.content_hash()] = trace
        return trace

    async def propose(self, task: Task, trace: Trace, direction: Direction, effort: Effort, feedback: list[str],
                      ctx: GenerationContext) -> Proposal | None:
        return await _propose.propose(self.runtime, task, trace, Direction(direction), Effort(effort), feedback,
                                      lineage=ctx.lineage, generation=ctx.generation)

    async def review(self, task: Task, proposal: Proposal, ctx: GenerationContext) -> Review:
        return await _review.review(self.runtime, self.plan_rubric, task, proposal, lineage=ctx.lineage,
                                    generation=ctx.generation)

    async def modify(self, task: Task, proposal: Proposal, feedback: list[str], ctx: GenerationContext) -> Task:
        verify = self._verify if self.modifier_verifies and self.shell is not None else None
        candidate, ws = await _modify.modify(self.runtime, task, proposal, feedback, ctx, shell=self.shell, verify=verify)
        if _without_meta(candidate) == _without_meta(task):
            refused = f" (refused: {'; '.join(ws.refused[:3])})" if ws.refused else ""
            raise CandidateFailed(f"the Modifier changed nothing{refused}")
        if lost := lost_hardening(task, candidate):  # read from the files: rejected before any container runs
            raise CandidateFailed("the candidate gives up its parent's separate verifier, which keeps the reward out "
                                  "of the agent's reach: " + "; ".join(lost))
        candidate.update_envevo_metadata(llm={
            "trace": _trace_meta(proposal.after),
            "trace_of": files_digest(candidate),
            "direction": proposal.direction.value,
            "effort": proposal.effort.value,
            "prompts": prompt_versions(),
            "models": {r: s.label for r, s in self.runtime.specs().items()},
        })
        key = candidate.content_hash()
        self._traces[key] = proposal.after  # until realizes_plan re-extracts it
        self._owners[key] = (ctx.lineage, ctx.generation)
        self._evolutions[key] = Evolution(parent=task, proposal=proposal)
        return candidate

    # ---- the Modifier's verifier tool ------------------------------------------------------------------------
    async def _verify(self, task_dir: Path, trials_dir: Path) -> str:
        try:
            load_task(task_dir)
        except TaskError as e:
            return f"not verified: the task is invalid: {e}"
        verdict = (await verify_tasks([(task_dir.name, task_dir)], trials_dir, env=self.env,
                                      verifiers=[OracleVerifier(repeats=1), InvalidTestVerifier()], gate=self._gate.get()))[0]
        lines = [f"{'PASSED' if verdict.ok else 'FAILED'}"]
        for name, rep in verdict.reports.items():
            lines.append(f"- {name}: {'pass' if rep.passed else 'fail'}")
            lines += [f"    {r}" for r in rep.reasons]
        return "\n".join(lines)


if TYPE_CHECKING:  # mypy holds the class to the contract the registry and the CLI keep to
    _REGISTERED: EngineClass = LLMEngine
    _CAPABLE: type[ModelEngine] = LLMEngine
