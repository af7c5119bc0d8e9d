"""`evolve(config)`: seeds into lineages of harder, verified generations, stored in a run (resumable)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from envevo.api._config import ModelConfig, SandboxConfig, ScaleConfig
from envevo.api._host import Notify, prepare_host, quiet, verification_model
from envevo.errors import UserError
from envevo.evolve import EvolveConfig

if TYPE_CHECKING:
    from envevo.evolve import Event
    from envevo.trace import ReferenceDistribution


class EvolveRun(BaseModel):
    """One `evolve` call: the seeds, the run dir, the run's settings (`EvolveConfig`, the shape a run stores; its
    `env` and `trial_concurrency` are where trials run and how many) and what is not stored with the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seeds: tuple[Path, ...]
    run_dir: Path
    settings: EvolveConfig = EvolveConfig()
    resume: bool = Field(False, description="continue the run stored in run_dir from each lineage's last generation")
    retry_skipped: bool = Field(False, description="with resume: try the seeds the run skipped again")
    explicit: frozenset[str] = Field(frozenset(), description="settings the caller gave, which a resume applies")
    model: ModelConfig = ModelConfig()
    sandbox: SandboxConfig = SandboxConfig()  # its image map, pass_env and project file (env and trials: `settings`)
    scale: ScaleConfig = ScaleConfig()
    rubrics: tuple[Path, ...] = Field((), description="extra rubric TOMLs for the judge")
    learn_rubric: Path | None = Field(None, description="a rubric TOML each hack the LLM red team proves is appended to")
    target_weakness: Path | None = Field(None, description="a run of rollouts whose agent's weakness to target")
    target_agent: str | None = Field(None, description="whose weakness, when that run holds several agents")


class LineageSummary(BaseModel):
    lineage: str
    status: str
    reason: str | None
    generations: int
    L: list[int | None]
    D_T: list[float | None]


class EvolveResult(BaseModel):
    run_dir: Path
    lineages: list[LineageSummary]
    all_seeds_rejected: bool = Field(False, description="every seed of this call was rejected at the seed gate (or "
                                                         "its ξ could not be read): nothing evolved")


def _check(config: EvolveRun) -> None:
    from envevo.store import RunPaths

    if config.retry_skipped and not config.resume:
        raise UserError("--retry-skipped reopens the skipped seeds of a stored run: add --resume")
    if config.resume and not RunPaths(run_dir=config.run_dir).db.is_file():  # a typo must not start a new run
        raise UserError(f"--resume: {config.run_dir} holds no run (no store.sqlite); check the path, or drop --resume "
                        "to start a new run there")


async def evolve(config: EvolveRun, *, weakness_p: ReferenceDistribution | None = None,
                 on_event: Callable[[Event], None] | None = None,
                 on_started: Callable[[dict[str, int], int], None] | None = None,
                 notify: Notify = quiet) -> EvolveResult:
    """Evolve each seed into a lineage. `weakness_p` is the p_T δ is estimated under with `target_weakness`;
    `on_started(latest generation by lineage, generations)` is called once the lineages are open."""
    from envevo.evolve import (
        Capability,
        engine_capabilities,
        is_skipped,
        is_targetable,
        make_engine,
        open_run,
        run_verifiers,
        start_lineages,
        uses_models,
    )
    from envevo.evolve import evolve as run_evolve
    from envevo.llm import settings_with_options
    from envevo.task import first_duplicate, load_task

    _check(config)
    s, m = config.settings, config.model
    sandbox = config.sandbox.model_copy(update={"env": s.env})
    mapping, executor = prepare_host(sandbox, config.scale, notify, trials=False)
    settings = settings_with_options(m.project, m.model, m.base_url, m.api_key_env, m.role_models, m.max_cost,
                                     m.max_tokens, m.prices, m.record, m.replay) \
        if Capability.USES_LLM in engine_capabilities(s.engine) else None
    engine, checks = make_engine(s.engine, settings, env=s.env, rubric_files=config.rubrics)
    if config.target_weakness is not None or config.target_agent is not None:
        from envevo.rollout import weakness_target

        if config.target_weakness is None:
            raise UserError("--by-agent names whose weakness to target; give the run of its rollouts with "
                            "--target-weakness RUN")
        if not is_targetable(engine):
            raise UserError("--target-weakness steers the procedural engine only; use --engine procedural or drop it")
        engine.target = weakness_target(config.target_weakness, config.target_agent, weakness_p)
    if uses_models(engine):
        await engine.preflight()  # a missing key or a dead endpoint: one line, before any work
    given = s.model_copy(update={
        "image_map": mapping.images,  # the seeds' and candidates' trials run with it (stored tasks keep their own)
        # Recorded so that --resume refuses to continue a lineage with different models.
        "models": {role: spec.label for role, spec in engine.runtime.specs().items()} if uses_models(engine) else {},
        "weakness_target": engine.target.model_dump(mode="json") if is_targetable(engine) and engine.target else None,
    })
    tasks = [load_task(p) for p in config.seeds]
    names = [p.resolve().name for p in config.seeds]
    if first_duplicate(names):
        raise UserError("two seeds share a folder name; lineages are named after it, so rename one")
    # Refuse seeds the engine cannot read before anything is written (a model's extraction that fails skips its
    # seed instead, in start_lineages).
    for task in tasks if Capability.OFFLINE_EXTRACTION in engine.capabilities else ():
        await engine.extract_trace(task)
    store, cfg = open_run(config.run_dir, given, resume=config.resume, explicit=config.explicit, notify=notify)
    try:
        for rec in getattr(getattr(weakness_p, "meter", None), "records", ()):  # outside lineages: listed by lineage show
            store.add_usage(rec.role, input_tokens=rec.input_tokens, output_tokens=rec.output_tokens, model=rec.model,
                            cost_usd=rec.cost_usd, estimated=rec.estimated)
        if cfg.weakness_target is not None and is_targetable(engine):  # on a resume, the δ the run started with
            from envevo.evolve.engines.procedural import WeaknessTarget

            engine.target = WeaknessTarget.model_validate(cfg.weakness_target)
            notify(f"targeting the weakness of {engine.target.agent}: "
                   + (", ".join(f"{k} δ={v:.2f}" for k, v in engine.target.weakest()) or "no δ > 0 yet (untargeted)"))
        lent = None  # an engine without a model still lends one to the hacker and model mutants: the config's
        if uses_models(engine):
            engine.attach_store(store)  # usage rows per role; budgets resume from what the store recorded
        else:
            lent = await verification_model(m.model_copy(update={"max_tokens": None}), cfg.verification())
            if lent is not None:
                if m.max_tokens is not None:  # its calls are all outside lineages: one budget under the lineages' cap
                    lent.meter.max_tokens = m.max_tokens
                from envevo.llm import attach_store

                attach_store(lent.meter, store)  # its calls are stored with the run's usage (outside lineages)
        # The red team's LLM hacker on the run's model (metered with it), learning into learn_rubric only when given.
        verifiers = run_verifiers(engine, cfg, config.learn_rubric, lent)
        ids = await start_lineages(store, list(zip(names, tasks, strict=True)), engine, cfg, checks=checks,
                                   on_event=on_event, retry_skipped=config.retry_skipped, verifiers=verifiers)
        if on_started is not None:
            on_started({lid: store.lineage(lid).latest_generation for lid in ids}, cfg.generations)
        await run_evolve(store, ids, engine, cfg, checks=checks, on_event=on_event, executor=executor,
                         verifiers=verifiers)
        summary = [LineageSummary(lineage=lin.id, status=str(lin.status), reason=lin.reason,
                                  generations=lin.latest_generation, L=[v.L for v in versions],
                                  D_T=[v.D_T for v in versions])
                   for lin in store.lineages() for versions in [store.versions(lin.id)]]
        seeded = [lin for lin in store.lineages() if lin.seed_name in names]  # this call's seeds' lineages
    finally:
        store.close()  # lets go of the run dir at once, also when called in-process (tests)
    return EvolveResult(run_dir=config.run_dir.resolve(), lineages=summary,
                        all_seeds_rejected=bool(seeded) and all(is_skipped(lin) for lin in seeded))
