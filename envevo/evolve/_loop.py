"""The generation loop of the paper, independent of the engine.

One generation = plan refinement (Proposer ⇄ Reviewer per direction, directions shuffled anew) followed by
environment refinement (Modifier ⇄ oracle | invalid-test | rubric verifiers, in parallel). The loop, not
the engine, enforces direction semantics and effort bounds, and it stores every plan and candidate,
accepted or not. A generation becomes durable only at `commit_generation`, so a crash loses at most the
generation in flight and `--resume` continues from the last committed one, planning against the ξ stored with
it. How a lineage starts from its seed (the seed gate, then ξ) is `_seed_start.py`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envevo.errors import UserError
from envevo.evolve._config import EvolveConfig
from envevo.evolve._engine import CandidateFailed, Engine, EngineStop, GenerationContext, Proposal, Review, uses_models
from envevo.evolve._events import Event, Stage
from envevo.evolve._recorder import Recorder, StoreRecorder
from envevo.store import LineageStore, Version, VersionCommit
from envevo.task import Task, save
from envevo.trace import Direction, Drift, Trace, check_direction, check_effort, difficulty
from envevo.verify import (
    DriftBound,
    Inheriting,
    TaskVerifier,
    TrialVerifier,
    default_verifiers,
    trial_line,
    verify_candidate,
)

if TYPE_CHECKING:
    from envevo.evolve._executor import Executor
    from envevo.llm import LLMRuntime


def direction_order(seed: int, lineage: str, generation: int, allowed: list[Direction] | None = None) -> list[Direction]:
    """Directions shuffled anew each generation, reproducibly from the run seed."""
    order = list(Direction)
    random.Random(f"{seed}|{lineage}|{generation}|directions").shuffle(order)
    if allowed is not None:  # filter after the shuffle: the full run's order stays what it was
        order = [d for d in order if d in allowed]
    return order


def run_verifiers(engine: Engine, config: EvolveConfig, learn_rubric: Path | None = None,
                  lent: LLMRuntime | None = None) -> list[TrialVerifier]:
    """The run's container verifiers. The LLM hacker and the writer of `model_mutants` near misses per candidate use
    the engine's model runtime, else `lent` (the model --config/--model name for an engine without one), metered
    and recorded with the run's; `learn_rubric` (an explicit option) is where a hack it proves is learned."""
    runtime = engine.runtime if uses_models(engine) else lent  # the engine contract, not an attribute lookup
    if runtime is None:  # no model: the llm package stays unimported
        return default_verifiers(config.repeats, red_team=config.red_team, mutation=config.mutation,
                                 learn_rubric=learn_rubric, probes=False)
    from envevo.llm import verifiers_with_model

    return list(verifiers_with_model(config.repeats, red_team=config.red_team, mutation=config.mutation,
                                     runtime=runtime, learn_rubric=learn_rubric, written=config.model_mutants, probes=False))


class GenerationWork:
    """One generation of one lineage: the plan loop, the environment loop and verification. Everything it
    writes goes through a Recorder, so the same code runs next to the store or on a worker without it."""

    def __init__(
        self,
        engine: Engine,
        config: EvolveConfig,
        checks: Sequence[TaskVerifier] = (),
        gate: asyncio.Semaphore | None = None,
        on_event: Callable[[Event], None] | None = None,
        verifiers: Sequence[TrialVerifier] | None = None,
    ):
        self.engine = engine
        self.cfg = config
        self.checks = list(checks)
        self.gate = gate or asyncio.Semaphore(config.trial_concurrency)
        self.on_event = on_event or (lambda e: None)
        self.verifiers = list(verifiers) if verifiers is not None else run_verifiers(engine, config)

    async def run[I](self, lineage: str, g: int, parent: Version, rec: Recorder[I]) -> str | None:
        """Run generation g on top of `parent`; None when a version was committed, else why the lineage ends."""
        task = rec.task(parent.task_hash)
        # The ξ committed with the parent: a fresh extraction (a new process, an LLM) could differ from what the
        # store holds, and costs tokens.
        trace = parent.trace if parent.trace is not None else await self.engine.extract_trace(task)
        self.on_event(Event(lineage, g, Stage.GENERATION, f"L={trace.L}"))
        why_not: list[str] = []
        for direction in direction_order(self.cfg.seed, lineage, g, self.cfg.directions):
            self.on_event(Event(lineage, g, Stage.DIRECTION, direction.value))
            rng = random.Random(f"{self.cfg.seed}|{lineage}|{g}|{direction.value}")
            workdir = rec.work_root / lineage / f"g{g:02d}-{direction.value}"
            workdir.mkdir(parents=True, exist_ok=True)
            ctx = GenerationContext(lineage=lineage, generation=g, rng=rng, workdir=workdir)
            planned = await self._plan_loop(rec, lineage, g, task, trace, direction, ctx)
            if planned is None:
                why_not.append(f"{direction.value}: no plan accepted within {self.cfg.plan_budget} rounds")
                continue
            committed = await self._environment_loop(rec, lineage, g, parent, task, *planned, ctx)
            if committed:
                return None
            why_not.append(f"{direction.value}: no candidate verified within {self.cfg.env_budget} rounds")
        return f"generation {g}: all directions failed ({'; '.join(why_not)})"

    async def _plan_loop[I](self, rec: Recorder[I], lineage: str, g: int, task: Task, trace: Trace,
                            direction: Direction, ctx: GenerationContext) -> tuple[Proposal, I] | None:
        feedback: list[str] = []
        for attempt in range(1, self.cfg.plan_budget + 1):
            proposal = await self.engine.propose(task, trace, direction, self.cfg.effort, list(feedback), ctx)
            if proposal is None:
                await rec.add_plan(lineage, g, direction.value, attempt, None, None,
                                   accepted=False, feedback="no edit possible in this direction")
                self.on_event(Event(lineage, g, Stage.PLAN, f"{direction.value}: no edit possible"))
                return None
            # The loop enforces direction semantics and effort itself, whatever the engine claims.
            problems = check_direction(trace, proposal.after, direction) + check_effort(trace, proposal.after, self.cfg.effort)
            if proposal.error:  # the engine's own reason (e.g. a cut answer), not "changed nothing" of its empty ξ′
                review = Review(accepted=False, feedback=proposal.error)
            elif problems:
                review = Review(accepted=False, feedback="; ".join(problems))
            else:
                review = await self.engine.review(task, proposal, ctx)
            plan_id = await rec.add_plan(lineage, g, direction.value, attempt, proposal, review)
            self.on_event(Event(lineage, g, Stage.PLAN, f"{direction.value} #{attempt}: {'accepted' if review.accepted else 'rejected'}"))
            if review.accepted:
                return proposal, plan_id
            feedback.append(review.feedback or "rejected")
        return None

    async def _environment_loop[I](self, rec: Recorder[I], lineage: str, g: int, parent: Version, task: Task,
                                   proposal: Proposal, plan_id: I, ctx: GenerationContext) -> bool:
        feedback: list[str] = []
        direction = proposal.direction.value
        checks, bound = list(self.checks), None
        if self.cfg.max_drift is not None:  # the drift bound needs the lineage's seed: one check per lineage
            bound = DriftBound(rec.seed_task(lineage), self.cfg.max_drift, parent=task)
            checks.append(bound)
        inheriting = [v for v in self.verifiers if isinstance(v, Inheriting)]  # mutation, red team
        kills = await rec.mutant_kills(parent) if inheriting else frozenset()
        for attempt in range(1, self.cfg.env_budget + 1):
            self.on_event(Event(lineage, g, Stage.CANDIDATE, f"{direction} #{attempt}: modifying"))
            try:
                candidate = await self.engine.modify(task, proposal, list(feedback), ctx)
            except CandidateFailed as e:  # nothing to verify; the reason goes back to the Modifier
                self.on_event(Event(lineage, g, Stage.CANDIDATE, f"{direction} #{attempt}: {e}"))
                # Stored like every other candidate, with no task: the run's history shows the attempt.
                await rec.add_candidate(lineage, g, direction, attempt, None, plan_id=plan_id,
                                        accepted=False, reasons=[f"modifier: {e}"])
                feedback.append(f"modifier: {e}")
                continue
            candidate_id = await rec.add_candidate(lineage, g, direction, attempt, candidate, plan_id=plan_id)
            # Verify a working copy: the stored version dir is immutable and Harbor must not touch it.
            task_dir = save(self.cfg.runnable(candidate), ctx.workdir / f"candidate-{attempt}", overwrite=True)
            trials_dir = ctx.workdir / f"trials-{attempt}"
            for v in inheriting:  # the parent's verdicts on byte-identical inputs are not run again
                v.inherit(task_dir, kills)
            self.on_event(Event(lineage, g, Stage.CANDIDATE, f"{direction} #{attempt}: verifying"))
            t0 = time.monotonic()
            verdict = await verify_candidate(
                candidate, task_dir, trials_dir, env=self.cfg.env, verifiers=self.verifiers, checks=checks,
                gate=self.gate, on_trial_done=lambda o: self.on_event(Event(lineage, g, Stage.TRIAL, trial_line(o))))
            wall = time.monotonic() - t0
            for report in verdict.reports.values():
                await rec.add_verifier_report(candidate_id, report, wall_seconds=wall)
            await rec.set_candidate_result(candidate_id, verdict.ok, verdict.reasons)
            if verdict.ok:
                new_trace = await self.engine.extract_trace(candidate)
                drift = bound.last if bound is not None else await self._drift(rec, lineage, g, candidate, parent.task_hash)
                # The commit point: one transaction.
                await rec.commit_generation(VersionCommit(
                    lineage_id=lineage, generation=g, task=candidate,
                    direction=direction, effort=self.cfg.effort.value, trace=new_trace,
                    difficulty=difficulty(new_trace, self.engine.reference()), verified=True,
                    parent_hash=parent.task_hash, drift=drift,
                ), candidate_id=candidate_id)
                self.on_event(Event(lineage, g, Stage.ACCEPTED, f"{direction}: L={new_trace.L}"))
                return True
            feedback.extend(verdict.reasons)
        return False

    async def _drift[I](self, rec: Recorder[I], lineage: str, g: int, candidate: Task, parent_hash: str) -> Drift | None:
        """The candidate's drift, to commit with it; None when the encoder is missing (`envevo analyze drift` later)."""
        try:
            return await rec.measure_drift(lineage, candidate, parent_hash)
        except UserError as e:
            self.on_event(Event(lineage, g, Stage.DRIFT, f"not measured: {e}"))
            return None


class LineageRunner:
    """Evolves lineages of one store, generation after generation; the executor decides where each runs."""

    def __init__(
        self,
        store: LineageStore,
        engine: Engine,
        config: EvolveConfig,
        checks: Sequence[TaskVerifier] = (),
        gate: asyncio.Semaphore | None = None,
        on_event: Callable[[Event], None] | None = None,
        verifiers: Sequence[TrialVerifier] | None = None,
        executor: Executor | None = None,
    ):
        self.store = store
        self.work = GenerationWork(engine, config, checks, gate, on_event, verifiers)
        self.cfg = config
        self.on_event = self.work.on_event
        self.executor = executor

    async def run(self, lineage: str) -> str:
        """Evolve one lineage up to the configured generation count; returns its final status."""
        while True:
            parent = self.store.latest_version(lineage)
            g = parent.generation + 1
            if g > self.cfg.generations:
                await asyncio.to_thread(self.store.finish_lineage, lineage, "done", f"reached generation {parent.generation}")
                self.on_event(Event(lineage, parent.generation, Stage.DONE, f"reached generation {parent.generation}"))
                return "done"
            try:
                reason = await (self.executor.generation(self, lineage, g, parent) if self.executor is not None
                                else self.generation(lineage, g, parent))
            except EngineStop as stop:  # e.g. the lineage's LLM budget is spent: end it, resumable
                await asyncio.to_thread(self.store.finish_lineage, lineage, stop.status, str(stop))
                self.on_event(Event(lineage, g, Stage.TERMINATED, str(stop)))
                return stop.status
            if reason is not None:
                await asyncio.to_thread(self.store.finish_lineage, lineage, "terminated", reason)
                self.on_event(Event(lineage, g, Stage.TERMINATED, reason))
                return "terminated"

    async def generation(self, lineage: str, g: int, parent: Version) -> str | None:
        """Generation g here, writing straight to the store."""
        return await self.work.run(lineage, g, parent, StoreRecorder(self.store))


async def evolve(
    store: LineageStore,
    lineages: Sequence[str],
    engine: Engine,
    config: EvolveConfig,
    checks: Sequence[TaskVerifier] = (),
    executor: Executor | None = None,
    on_event: Callable[[Event], None] | None = None,
    verifiers: Sequence[TrialVerifier] | None = None,
) -> dict[str, str]:
    """Evolve several lineages into one store, at most `lineage_concurrency` at a time."""
    from envevo.evolve._executor import AsyncioExecutor

    gate = asyncio.Semaphore(config.trial_concurrency)
    executor = executor or AsyncioExecutor()
    runner = LineageRunner(store, engine, config, checks=checks, gate=gate, on_event=on_event, verifiers=verifiers,
                           executor=executor)
    statuses = await executor.map(runner.run, list(lineages), config.lineage_concurrency)
    return dict(zip(lineages, statuses, strict=False))
