"""D_T and its terms under a named p_T estimator, one row per task or per committed generation of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envevo.trace import ReferenceDistribution, difficulty, has_trace, trace_of_task
from envevo.trace import estimator as get_estimator


def reference(estimator: str | ReferenceDistribution) -> ReferenceDistribution:
    """An estimator given by name (built without options) or already built."""
    return get_estimator(estimator) if isinstance(estimator, str) else estimator


async def extract_traces(tasks: list, model: str, base_url: str | None = None, usage: list | None = None) -> list:
    """ξ of each task by the LLM engine's Proposer (its extraction, evidence-checked), on the caller's event loop.
    The meter's records (envevo.llm.UsageRecord) of every call go to `usage`, also when one fails."""
    from envevo.evolve import make_engine, uses_models
    from envevo.llm import settings_with_options

    engine, _ = make_engine("llm", settings_with_options(model=model, base_url=base_url))
    assert uses_models(engine)  # the llm engine declares Capability.USES_LLM
    try:
        await engine.preflight()
        return [await engine.extract_trace(t) for t in tasks]
    finally:
        if usage is not None:
            usage.extend(engine.runtime.meter.records)


async def task_rows(paths: list[Path], estimator: str | ReferenceDistribution = "catalog",
                    extract_model: str | None = None, base_url: str | None = None,
                    usage: list | None = None) -> list[dict[str, Any]]:
    """One row per task dir: its ξ and D_T terms. ξ comes from [metadata.envevo], else from `extract_model`, whose
    usage records go to `usage`. Async because that extraction asks a model: the caller owns the event loop."""
    from envevo.task import load_task

    p = reference(estimator)
    tasks = [load_task(path) for path in paths]
    need = [t for t in tasks if not has_trace(t)]
    extracted = {}
    if need and extract_model is not None:
        traces = await extract_traces(need, extract_model, base_url, usage)
        extracted = {t.content_hash(): x for t, x in zip(need, traces, strict=True)}
    rows = []
    for path, task in zip(paths, tasks, strict=True):
        key = task.content_hash()
        trace = extracted[key] if key in extracted else trace_of_task(task)
        rows.append({"task": task.name, "path": str(path), "task_hash": key,
                     "xi_source": f"llm:{extract_model}" if key in extracted else "metadata",
                     "xi": trace.pretty(), "trace": trace.model_dump(mode="json"), **difficulty(trace, p).model_dump()})
    return rows


def run_rows(run: Path, estimator: str | ReferenceDistribution | None = None) -> list[dict[str, Any]]:
    """One row per committed generation of every lineage, D_T recomputed under `estimator` (default: the one the
    run recorded its D_T under, so the figures compare with the run's own; catalog when it recorded none)."""
    from envevo.evolve import recorded_run_estimators, run_estimator
    from envevo.store import LineageStore

    if estimator is None:
        p = run_estimator(run) if recorded_run_estimators(run) else reference("catalog")
    else:
        p = reference(estimator)
    rows = []
    with LineageStore.open(run, create=False) as store:
        for lin in store.lineages():
            for v in store.versions(lin.id):
                # The stored ξ is what evolution saw; fall back to the task only for versions stored without it.
                trace = v.trace or trace_of_task(store.load_version_task(v.task_hash))
                rows.append({"lineage": lin.id, "generation": v.generation, "direction": v.direction,
                             "effort": v.effort, "verified": v.verified, "task_hash": v.task_hash,
                             "xi": trace.pretty(), "trace": trace.model_dump(mode="json"),
                             **difficulty(trace, p).model_dump()})
    return rows
