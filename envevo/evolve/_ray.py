"""The Ray executor (envevo[ray]): each generation of a lineage is one Ray task on a cluster worker.

The worker has no store. It receives the parent version's task files and the seed (content-addressed: a node
keeps what it got once, under its cache dir), runs the generation through the same `GenerationWork` as the
asyncio executor, writing into a `BufferRecorder`, and sends the records back; the driver, the store's single
writer, replays them. A generation is durable only at its commit, so when a node is lost Ray runs the task
again elsewhere (`max_retries`) and at most that generation is redone.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import ray
from ray.actor import ActorHandle
from ray.util.queue import Queue
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from envevo.errors import EngineStop
from envevo.evolve._engine import Engine, uses_models
from envevo.evolve._events import Event, Stage
from envevo.evolve._executor import AsyncioExecutor
from envevo.evolve._loop import GenerationWork
from envevo.evolve._recorder import AddUsage, BufferRecorder, Record, StoreRecorder, replay
from envevo.runtime import DEFAULT_ENGINE, TrialOutcome, TrialSpec
from envevo.task import Task, load_task, save

if TYPE_CHECKING:
    from envevo.evolve._loop import LineageRunner
    from envevo.llm import Meter, UsageRecord
    from envevo.store import Version

CACHE_ENV = "ENVEVO_RAY_CACHE"  # where a node keeps the task files it received; default under the temp dir


def node_cache() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / "envevo-ray")


def cached_task(task_hash: str, ref: ray.ObjectRef[Task]) -> Task:
    """The task `task_hash` from this node's cache, fetched from the object store only on the first use."""
    path = node_cache() / "tasks" / task_hash
    if path.is_dir():
        return load_task(path)
    task: Task = ray.get(ref)
    save(task, path, overwrite=True)  # atomic: a concurrent worker's copy is the same content
    return task


class QuotaActor:
    """The one holder of --max-sandboxes and --start-rate for the whole cluster (on the driver's node)."""

    def __init__(self, max_sandboxes: int | None, start_rate: float | None):
        from envevo.runtime import LocalLimiter

        self.limiter = LocalLimiter(max_sandboxes, start_rate)

    async def acquire(self) -> None:
        await self.limiter.acquire()

    async def release(self) -> None:
        await self.limiter.release()

    async def pause(self, seconds: float) -> None:
        await self.limiter.pause(seconds)

    def peak(self) -> int:
        return self.limiter.peak


class ActorLimiter:
    """A worker's (and the driver's) limiter: every sandbox start and stop asks the cluster's QuotaActor."""

    def __init__(self, actor: ActorHandle[QuotaActor]):
        self.actor = actor

    async def acquire(self) -> None:
        await self.actor.acquire.remote()

    async def release(self) -> None:
        await self.actor.release.remote()

    async def pause(self, seconds: float) -> None:
        await self.actor.pause.remote(seconds)


@dataclass
class UnitResult:
    records: list[Record]
    reason: str | None  # as GenerationWork.run: None when committed
    stop: tuple[str, str] | None = None  # an EngineStop's (status, message)
    worker: str = ""
    events: list[Event] = field(default_factory=list)


def _local_engine(env: str) -> str | None:
    from envevo.runtime import resolve_env

    try:
        return resolve_env(env).engine
    except ValueError:
        return None


def _meter(engine: Engine) -> Meter | None:
    """An LLM engine's meter (its spending per lineage), or None: the engine contract says whether it has one."""
    return engine.runtime.meter if uses_models(engine) else None


def _attach_usage(engine: Engine, rec: BufferRecorder) -> None:
    """An LLM engine's meter writes usage rows to its store; here they become records too."""
    meter = _meter(engine)
    if meter is None:
        return

    def note(u: UsageRecord) -> None:
        rec.add_usage(u.role, input_tokens=u.input_tokens, output_tokens=u.output_tokens, model=u.model,
                      cost_usd=u.cost_usd, lineage_id=u.lineage, generation=u.generation)

    meter.on_usage = note


def run_unit(work: GenerationWork, lineage: str, g: int, parent: Version, tasks: dict[str, ray.ObjectRef[Task]],
             seed_hash: str, events: Queue, quota: ActorHandle[QuotaActor] | None, kills: frozenset[str]) -> UnitResult:
    """One generation on this worker (the body of the Ray task). `kills`: the parent's killed mutant keys, read from
    the driver's store."""
    from envevo.runtime import owner_id, remove_containers, set_limiter, sweep_orphans

    if quota is not None:
        set_limiter(ActorLimiter(quota))

    worker = f"{socket.gethostname()}:{os.getpid()}"
    engine = _local_engine(work.cfg.env)
    if engine:  # a worker killed on this node (a lost node that came back) left its sandboxes: remove them
        sweep_orphans(engine)
    root = node_cache() / "work" / f"{lineage}-g{g:02d}-{uuid.uuid4().hex[:8]}"
    rec = BufferRecorder({h: cached_task(h, ref) for h, ref in tasks.items()}, seed_hash, root, kills=kills)
    _attach_usage(work.engine, rec)

    def on_event(event: Event) -> None:
        try:
            events.put_nowait(event)
        except Exception:  # progress only: a lost event must not cost the generation
            pass

    work.on_event = on_event
    work.gate = asyncio.Semaphore(work.cfg.trial_concurrency)
    work.on_event(Event(lineage, g, Stage.WORKER, worker))
    try:
        reason = asyncio.run(work.run(lineage, g, parent, rec))
        return UnitResult(rec.records, reason, worker=worker)
    except EngineStop as stop:  # what was recorded before the stop is replayed too, as the local path writes it
        return UnitResult(rec.records, None, stop=(stop.status, str(stop)), worker=worker)
    finally:
        if engine:  # a cancelled unit (Ctrl-C on the driver) leaves no sandbox behind
            remove_containers(engine, owner_id())
        shutil.rmtree(root, ignore_errors=True)


def run_remote_trial(spec: TrialSpec, task_hash: str, tasks: dict[str, ray.ObjectRef[Task]],
                     quota: ActorHandle[QuotaActor] | None) -> TrialOutcome:
    """One trial on this worker (the body of the Ray task for verify and rollout): the task from the node's cache."""
    from envevo.runtime import owner_id, remove_containers, run_trial, set_limiter

    if quota is not None:
        set_limiter(ActorLimiter(quota))
    root = node_cache() / "trials" / uuid.uuid4().hex[:12]
    task_dir = save(cached_task(task_hash, tasks[task_hash]), root / spec.task_dir.name)  # a copy: the cache stays
    engine = _local_engine(spec.env)
    try:
        outcome: TrialOutcome = asyncio.run(run_trial(spec.model_copy(update={"task_dir": task_dir,
                                                                               "trials_dir": root / "trials"})))
        return outcome
    finally:
        if engine:
            remove_containers(engine, owner_id())


async def cancel_remote[T](ref: ray.ObjectRef[T], env: str, grace: float = 30) -> None:
    """Cancel a Ray task and wait (up to `grace` s) for it to end: its worker removes its sandboxes on the way
    out. One that does not end is killed, and what it left on this host is swept now; on another node, by the
    next unit that starts there."""
    ray.cancel(ref)
    if not await _settled(ref, grace):
        ray.cancel(ref, force=True)
        await _settled(ref, 10)
    engine = _local_engine(env)
    if engine:
        from envevo.runtime import sweep_orphans

        await asyncio.to_thread(sweep_orphans, engine)


async def _settled[T](ref: ray.ObjectRef[T], timeout: float) -> bool:
    try:
        await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout)
    except TimeoutError:
        return False
    except BaseException:  # noqa: BLE001 (cancelled or failed: ended all the same)
        pass
    return True


class RayTrialRunner:
    """Each trial one Ray task: the task files travel content-addressed, the outcome comes back (its trial_dir
    names the worker's copy of the logs)."""

    def __init__(self, executor: RayExecutor):
        self.executor = executor
        self._loaded: dict[Path, tuple[str, ray.ObjectRef[Task]]] = {}

    async def __call__(self, spec: TrialSpec) -> TrialOutcome:
        ex = self.executor
        ex._connect()
        if ex.quota is None:
            ex.quota = _cluster_quota(ex._here())
        key = Path(spec.task_dir).resolve()
        if key not in self._loaded:
            task = load_task(key)
            self._loaded[key] = (task.content_hash(), ray.put(task))
        task_hash, ref = self._loaded[key]
        remote = ray.remote(max_retries=ex.max_retries, num_cpus=1)(run_remote_trial)
        out = remote.remote(spec, task_hash, {task_hash: ref}, ex.quota)
        try:
            return await out
        except asyncio.CancelledError:
            await cancel_remote(out, spec.env)
            raise


class RayExecutor(AsyncioExecutor):
    """Lineages are asyncio tasks on the driver, as with asyncio; each generation runs as a Ray task."""

    def __init__(self, address: str | None = None, max_retries: int = 3, **options: object):
        self.address = address
        self.max_retries = max_retries
        self._objects: dict[str, ray.ObjectRef[Task]] = {}  # task hash -> object ref, put once per run
        self._work: ray.ObjectRef[GenerationWork] | None = None
        self._events: Queue | None = None
        self._pump: asyncio.Task[None] | None = None
        self.quota: ActorHandle[QuotaActor] | None = None
        self._env = DEFAULT_ENGINE

    def _connect(self) -> None:
        if not ray.is_initialized():
            ray.init(address=self.address, ignore_reinit_error=True, log_to_driver=False, configure_logging=False)

    def _here(self) -> NodeAffinitySchedulingStrategy:
        return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)

    def trial_runner(self) -> RayTrialRunner:
        return RayTrialRunner(self)

    def _task_ref(self, runner: LineageRunner, task_hash: str) -> ray.ObjectRef[Task]:
        if task_hash not in self._objects:
            self._objects[task_hash] = ray.put(runner.store.load_version_task(task_hash))
        return self._objects[task_hash]

    async def _pump_events(self, runner: LineageRunner) -> None:
        """Workers' events, shown live on the driver's progress view."""
        while True:
            try:
                assert self._events is not None  # made before the pump starts
                batch = self._events.get_nowait_batch(self._events.qsize())
            except Exception:  # the queue actor went away with the cluster
                return
            for event in batch:
                runner.on_event(event)
            await asyncio.sleep(0.2)

    async def generation(self, runner: LineageRunner, lineage: str, g: int, parent: Version) -> str | None:
        self._connect()
        w, meter = runner.work, _meter(runner.work.engine)
        self._env = w.cfg.env
        if self._work is None or meter is not None:
            # The engine, config and verifiers: shipped once, or with each generation when the engine meters its
            # spending (the worker then checks the lineage's budget against what it has spent so far).
            hook = meter.on_usage if meter is not None else None
            if meter is not None:
                meter.on_usage = None  # it writes to the driver's store: not for the worker
            try:
                self._work = ray.put(GenerationWork(w.engine, w.cfg, w.checks, verifiers=w.verifiers))
            finally:
                if meter is not None:
                    meter.on_usage = hook
        if self._events is None:  # the worker has its own gate; its events come back through a queue
            # On the driver's node: it lives and dies with the driver, not with a worker node.
            here = self._here()
            self._events = Queue(actor_options={"num_cpus": 0, "scheduling_strategy": here})
            if self.quota is None:
                self.quota = _cluster_quota(here)
            self._pump = asyncio.create_task(self._pump_events(runner))
        seed_hash = runner.store.lineage(lineage).seed_hash
        tasks = {h: self._task_ref(runner, h) for h in {parent.task_hash, seed_hash}}
        remote = ray.remote(max_retries=self.max_retries, num_cpus=1)(run_unit)
        kills = await StoreRecorder(runner.store).mutant_kills(parent)
        ref = remote.remote(self._work, lineage, g, parent, tasks, seed_hash, self._events, self.quota, kills)
        try:
            result: UnitResult = await ref
        except asyncio.CancelledError:  # Ctrl-C on the driver: the worker stops and removes its sandboxes
            await cancel_remote(ref, self._env)
            raise
        await asyncio.to_thread(replay, runner.store, result.records)
        if meter is not None:  # the driver's meter learns what the worker spent
            for rec in result.records:
                if isinstance(rec, AddUsage) and rec.lineage_id:
                    spent = meter.spent(rec.lineage_id)
                    meter.preload(rec.lineage_id, spent.tokens + rec.input_tokens + rec.output_tokens,
                                  spent.cost_usd + (rec.cost_usd or 0.0))
        if result.stop is not None:
            status, message = result.stop
            stop = EngineStop(message)
            stop.status = status
            raise stop
        return result.reason


def _cluster_quota(placement: NodeAffinitySchedulingStrategy) -> ActorHandle[QuotaActor] | None:
    """The QuotaActor for the driver's quotas, installed for the driver's own trials too; None without quotas."""
    from envevo.runtime import quota_settings, set_limiter

    max_sandboxes, start_rate = quota_settings()
    if max_sandboxes is None and start_rate is None:
        return None
    # options(): ray's typed remote(**options) leaves NodeAffinitySchedulingStrategy out; the same call otherwise
    actor = ray.remote(QuotaActor).options(num_cpus=0, scheduling_strategy=placement).remote(max_sandboxes, start_rate)
    assert isinstance(actor, ActorHandle)
    set_limiter(ActorLimiter(actor))
    return actor
