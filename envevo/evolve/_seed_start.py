"""The start of a lineage: the seed gate first, then ξ.

A seed is verified like every later generation (and hardened when only the red team failed it), and only a seed
the gate let through has its ξ extracted: from generation 0 as it will be stored (the hardened copy, when there is
one), and with no model tokens spent on a seed the gate rejects. The lineage row is written right after the gate, so
a run stopped between the gate and ξ resumes with the gate's outcome kept and extracts ξ only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from envevo.errors import UserError
from envevo.evolve._config import EvolveConfig
from envevo.evolve._engine import Engine, EngineStop
from envevo.evolve._events import Event, Stage
from envevo.evolve._loop import run_verifiers
from envevo.evolve._seed_harden import harden_seed, only_hardenable
from envevo.store import Lineage, LineageStore, StoreError, Version
from envevo.task import Task, save
from envevo.trace import difficulty, measure_drift
from envevo.verify import TaskVerifier, TrialVerifier, Verdict, verify_candidate

#: How a lineage whose seed never evolved says why: the reasons `--retry-skipped` recognises.
SKIPPED = "skipped: "  # no usable ξ (an LLM extraction failed)
UNSOUND = "the seed is not sound: "  # the seed gate: oracle, invalid-test, red team, or (strict) mutation


def is_skipped(lineage: Lineage) -> bool:
    """A lineage that ended at its seed, before any generation: extraction or the seed gate failed."""
    return (lineage.status == "terminated" and lineage.latest_generation == 0
            and (lineage.reason or "").startswith((SKIPPED, UNSOUND)))


def reopens(lineage: Lineage, config: EvolveConfig) -> bool:
    """A resume asking for more generations (or budget) reopens a lineage that stopped for lack of them."""
    return lineage.status == "budget_exhausted" or (lineage.status == "done"
                                                    and lineage.latest_generation < config.generations)


def seed_version(store: LineageStore, lid: str) -> Version:
    """Generation 0 of a lineage: written with its row, so always there in a consistent store."""
    v0 = store.version(lid, 0)
    if v0 is None:
        raise StoreError(f"run {store.run_dir}: lineage {lid!r} has no generation 0; start it in a new --run")
    return v0


def stored_seed(store: LineageStore, lineage: Lineage, task: Task) -> Task:
    """The task a known lineage's generation 0 is for `task` as given: its hardened copy, when the gate hardened
    it (the provenance names the seed's hash), else `task` itself (which the store then checks is the same seed)."""
    v0 = seed_version(store, lineage.id)
    if v0.task_hash != task.content_hash():
        gen0 = store.load_version_task(v0.task_hash)
        if (gen0.envevo_metadata.get("hardened") or {}).get("from_content_hash") == task.content_hash():
            return gen0
    return task


@dataclass
class SeedStart:
    """Opens a lineage from a seed: the seed gate (and harden), the lineage row, then ξ of generation 0."""

    store: LineageStore
    engine: Engine
    config: EvolveConfig
    checks: Sequence[TaskVerifier]
    verifiers: Sequence[TrialVerifier]
    gate: asyncio.Semaphore
    on_event: Callable[[Event], None]

    async def open(self, name: str, task: Task, known: Lineage | None = None) -> str:
        """A new seed, or (`known`) a skipped one tried again: a seed whose gate passed and whose extraction failed
        keeps its gate's outcome and has its ξ extracted again; one the gate refused is gated again."""
        if known is not None and (known.reason or "").startswith(SKIPPED) and seed_version(self.store, known.id).verified:
            await asyncio.to_thread(self.store.finish_lineage, known.id, "running")
            return await self.extract(name, known.id)
        sound, why, verdict = await self._gate(name, task)
        task, sound, why = await harden_seed(self, name, task, verdict, sound, why)  # only the red team failed it
        lid = await asyncio.to_thread(self.store.create_lineage, name, task, verified=sound)
        try:  # the seed's own figures (similarity 1, no parent), with the encoder that will measure the rest
            await asyncio.to_thread(lambda: self.store.set_drift(lid, 0, measure_drift(task, task, None)))
        except UserError:
            pass
        if not sound:
            await self._end(name, lid, why)
            return lid
        if known is not None:  # tried again and sound now: the lineage evolves like a new one
            await asyncio.to_thread(self.store.finish_lineage, lid, "running")
        return await self.extract(name, lid)

    async def extract(self, name: str, lid: str) -> str:
        """ξ of generation 0 (the gated seed, or its hardened copy), stored with it; a lineage whose ξ the engine
        cannot give (an LLM extraction failed) ends, skipped, and the other seeds go on. Kept when already stored."""
        v0 = seed_version(self.store, lid)
        if v0.trace is not None:
            return lid
        task = await asyncio.to_thread(self.store.load_version_task, v0.task_hash)
        if task.source is not None:  # named as the seed (a stored task's folder is its hash), for the engine's messages
            task = task.model_copy(update={"source": task.source.with_name(name)})
        try:
            trace = await self.engine.extract_trace(task)
        except EngineStop as e:  # no ξ to plan on (a failed extraction, a spent cap): skipped; --retry-skipped reopens it
            await self._end(name, lid, SKIPPED + str(e))
            return lid
        seed_name = self.store.lineage(lid).seed_name
        await asyncio.to_thread(self.store.create_lineage, seed_name, task, trace=trace,
                                difficulty=difficulty(trace, self.engine.reference()))
        return lid

    async def _end(self, name: str, lid: str, reason: str) -> None:
        await asyncio.to_thread(self.store.finish_lineage, lid, "terminated", reason)
        self.on_event(Event(name, 0, Stage.TERMINATED, reason))

    async def _gate(self, name: str, task: Task) -> tuple[bool, str, Verdict]:
        """Verify the seed like every later generation; the rubric judges it (recorded, shown) but does not gate it."""
        workdir = self.store.run_dir / "work" / "seeds" / name
        task_dir = save(self.config.runnable(task), workdir / "task", overwrite=True)
        self.on_event(Event(name, 0, Stage.CANDIDATE, "verifying the seed"))
        verdict = await verify_candidate(task, task_dir, workdir / "trials", env=self.config.env, verifiers=self.verifiers,
                                         checks=self.checks, gate=self.gate, strict=self.config.strict_mutation)
        await asyncio.to_thread((workdir / "verdict.json").write_text, verdict.model_dump_json(indent=1))
        gating = {k: r for k, r in verdict.reports.items() if k != "rubric"}  # oracle, invalid-test, red team
        judged = verdict.reports.get("rubric")
        if judged is not None:
            said = "; ".join(judged.reasons) if not judged.passed else "; ".join(judged.notes[-1:])
            self.on_event(Event(name, 0, Stage.JUDGED, f"the seed's rubric verdict, which does not gate it: "
                                                   f"{'pass' if judged.passed else 'fail'}{': ' + said if said else ''}"))
        if all(r.passed or (r.weak and not verdict.strict) for r in gating.values()):  # a user's seed may be weak
            if weak := "; ".join(r for rep in gating.values() for r in rep.reasons):
                self.on_event(Event(name, 0, Stage.WEAK, f"the seed is weak (accepted; --mutation strict rejects it): {weak}"))
            return True, "", verdict
        # One line: each finding's first line (the full findings are in verdict.json, beside the seed's trials).
        reason = UNSOUND + "; ".join(f"{k}: {r.strip().splitlines()[0]}" for k, rep in gating.items()
                                     for r in rep.reasons if r.strip())
        if only_hardenable(verdict):  # most public tasks test in the agent's container: an agent can forge the reward
            reason += (" — only the red team failed it: give the seed a separate verifier environment "
                       "(`envevo harden`, docs/trust.md#harden), or evolve it anyway with --red-team off")
        return False, reason, verdict


def kept_line(lineage: Lineage) -> str:
    """What a resume says of a lineage it leaves as it ended (nothing re-extracted, nothing re-verified)."""
    g = lineage.latest_generation
    said = f"kept as stored: {lineage.status}, {g} generation{'' if g == 1 else 's'}: {lineage.reason or 'no reason recorded'}"
    return said + (" (--retry-skipped tries this seed again)" if is_skipped(lineage) else "")


async def start_lineages(
    store: LineageStore,
    seeds: Sequence[tuple[str, Task]],
    engine: Engine,
    config: EvolveConfig,
    checks: Sequence[TaskVerifier] = (),
    on_event: Callable[[Event], None] | None = None,
    verifiers: Sequence[TrialVerifier] | None = None,
    retry_skipped: bool = False,
) -> list[str]:
    """Create (or find, on resume) one lineage per seed; return those still to evolve.

    A new seed is verified first, like every later generation: a lineage must start from a sound task, and its ξ is
    extracted only then. A seed that fails ends its lineage at once, with the verifiers' reasons. The rubric judges
    a seed but does not gate it: its verdict is recorded (RUN/work/seeds/NAME/verdict.json) and shown (a `judged`
    event), and the seed's children are judged against it.

    On resume a known lineage is taken as stored: nothing is verified again, and ξ is extracted only for a seed that
    passed its gate and has none yet (the run stopped in between); one that stays ended is reported (a `kept`
    event). `retry_skipped` opens the seeds this run skipped (failed extraction or gate) again, with the current
    settings.
    """
    on_event = on_event or (lambda e: None)
    verifiers = list(verifiers) if verifiers is not None else run_verifiers(engine, config)
    seeding = SeedStart(store, engine, config, checks, verifiers, asyncio.Semaphore(config.trial_concurrency), on_event)
    known = {lin.seed_name: lin for lin in store.lineages()}
    todo: list[str] = []

    async def start(name: str, task: Task) -> None:
        was = known.get(name)
        opened = was is None or (retry_skipped and is_skipped(was))
        if opened:
            lid = await seeding.open(name, task, was)
        else:  # only checks that it is the same seed (or its hardened copy)
            assert was is not None
            lid = await asyncio.to_thread(store.create_lineage, name, stored_seed(store, was, task))
        lin = store.lineage(lid)
        if not opened and reopens(lin, config):  # stopped in an earlier process for lack of generations or budget
            await asyncio.to_thread(store.finish_lineage, lid, "running")
            lin = store.lineage(lid)
        if not opened and lin.status == "running" and lin.latest_generation == 0:  # stopped between the gate and ξ
            await seeding.extract(name, lid)
            lin = store.lineage(lid)
        if lin.status == "running":
            todo.append(lid)
        elif not opened:  # ended in an earlier process, and left so
            on_event(Event(lid, lin.latest_generation, Stage.KEPT, kept_line(lin)))

    await asyncio.gather(*(start(name, task) for name, task in seeds))
    order = {name: i for i, (name, _) in enumerate(seeds)}
    return sorted(todo, key=lambda lid: order.get(store.lineage(lid).seed_name, 0))
