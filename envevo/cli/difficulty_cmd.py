"""`envevo difficulty TASK|RUN`: ξ, L, scenario novelty, skill rarity and D_T under a named p_T estimator."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli._common import out, print_json, user_errors
from envevo.errors import UserError

if TYPE_CHECKING:
    from envevo.trace._difficulty import ReferenceDistribution


def _p_t(estimator: str | ReferenceDistribution) -> ReferenceDistribution:
    """An estimator given by name (built without options) or already built (see `build_estimator`)."""
    from envevo.trace._estimators import estimator as get_estimator

    return get_estimator(estimator) if isinstance(estimator, str) else estimator


def build_estimator(name: str, **options: Any) -> ReferenceDistribution:
    """p_T `name` with its command-line options; its notes (e.g. corpus tasks skipped) go to stderr."""
    from envevo.cli._common import err
    from envevo.trace._estimators import estimator as get_estimator

    p = get_estimator(name, flag_names={"model": "--reference-model", "method": "--llm-method"}, **options)
    for note in getattr(p, "notes", None) or []:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    return p


def extract_traces(tasks: list, model: str, base_url: str | None = None) -> list:
    """ξ of each task by the LLM engine's Proposer (its extraction, evidence-checked), in one event loop."""
    import asyncio

    from envevo.cli.evolve_cmd import make_engine

    engine, _ = make_engine("llm", {"model": model, "base_url": base_url})

    async def run() -> list:
        await engine.preflight()
        return [await engine.extract_trace(t) for t in tasks]

    return asyncio.run(run())


def task_rows(paths: list[Path], estimator: str | ReferenceDistribution = "catalog", extract_model: str | None = None,
              base_url: str | None = None) -> list[dict[str, Any]]:
    """One row per task dir: its ξ and D_T terms. ξ comes from [metadata.envevo], else from `extract_model`."""
    from envevo.task import load_task
    from envevo.trace import difficulty as d_t
    from envevo.trace._estimators import has_trace, trace_of_task

    p = _p_t(estimator)
    tasks = [load_task(path) for path in paths]
    need = [t for t in tasks if not has_trace(t)]
    extracted = {}
    if need and extract_model is not None:
        extracted = {t.content_hash(): x for t, x in zip(need, extract_traces(need, extract_model, base_url))}
    rows = []
    for path, task in zip(paths, tasks):
        key = task.content_hash()
        trace = extracted[key] if key in extracted else trace_of_task(task)
        rows.append({"task": task.name, "path": str(path), "task_hash": key,
                     "xi_source": f"llm:{extract_model}" if key in extracted else "metadata",
                     "xi": trace.pretty(), "trace": trace.model_dump(mode="json"), **d_t(trace, p).model_dump()})
    return rows


def run_rows(run: Path, estimator: str | ReferenceDistribution = "catalog") -> list[dict[str, Any]]:
    """One row per committed generation of every lineage, D_T recomputed under `estimator`."""
    from envevo.store import LineageStore
    from envevo.trace import difficulty as d_t
    from envevo.trace._estimators import trace_of_task

    p = _p_t(estimator)
    rows = []
    with LineageStore.open(run, create=False) as store:
        for lin in store.lineages():
            for v in store.versions(lin.id):
                # The stored ξ is what evolution saw; fall back to the task only for versions stored without it.
                trace = v.trace or trace_of_task(store.load_version_task(v.task_hash))
                rows.append({"lineage": lin.id, "generation": v.generation, "direction": v.direction,
                             "effort": v.effort, "verified": v.verified, "task_hash": v.task_hash,
                             "xi": trace.pretty(), "trace": trace.model_dump(mode="json"), **d_t(trace, p).model_dump()})
    return rows


def _is_run(path: Path) -> bool:
    return (path / "store.sqlite").is_file()


@user_errors
def difficulty(
    target: Path = typer.Argument(..., help="A task dir, a folder of task dirs, or a RUN dir (--out of `envevo evolve`)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object with D_T and its terms per task or generation."),
    estimator: str = typer.Option("catalog", "--estimator", help="p_T estimator: catalog (the procedural engine's priors), "
                                  "corpus (label frequencies over --corpus), llm (a reference model's probabilities)."),
    corpus: list[Path] | None = typer.Option(None, "--corpus", help="With --estimator corpus: reference tasks (task dirs, "
                                             "folders of them, RUN dirs); repeat for more."),
    embedding_model: Path | None = typer.Option(None, "--embedding-model", help="With --estimator corpus: a local "
                                                "sentence-transformers BERT model dir (default: all-MiniLM-L6-v2)."),
    reference_model: str | None = typer.Option(None, "--reference-model", help="With --estimator llm: the reference model "
                                               "(default: model under [llm] in envevo.toml)."),
    base_url: str | None = typer.Option(None, "--base-url", help="With --estimator llm or --extract-model: the "
                                        "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (key from OPENAI_API_KEY)."),
    llm_method: str | None = typer.Option(None, "--llm-method", help="With --estimator llm: auto (default), logprobs "
                                          "(score labels via /v1/completions echo) or judgement (ask via chat)."),
    extract_model: str | None = typer.Option(None, "--extract-model", help="For tasks without ξ in [metadata.envevo]: "
                                             "extract it with this model (provider:name, the LLM engine's Proposer; "
                                             "--base-url for an OpenAI-compatible endpoint)."),
    weakness: bool = typer.Option(False, "--weakness", help="RUN only: a model's weakness δ_θ = [d_θ − d_T]_+ per skill and "
                                  "scenario, estimated from its recorded rollouts (`envevo rollout RUN`)."),
    agent: str | None = typer.Option(None, "--agent", help="With --weakness: whose rollouts (needed when the run has several)."),
    model: str | None = typer.Option(None, "--model", help="With --weakness: which model of that agent."),
) -> None:
    """Model-free difficulty D_T = Σ [−log p_T(σ|g) − log p_T(κ|σ,g)] of tasks, or of every generation of a run."""
    from envevo.task import expand_task_dirs

    if not target.exists():
        raise UserError(f"{target} does not exist; pass a task dir or the --out dir of an `envevo evolve` run")
    p = build_estimator(estimator, corpus=corpus, embedding_model=embedding_model, model=reference_model,
                        base_url=base_url if estimator == "llm" else None, method=llm_method)
    if weakness or agent is not None or model is not None:
        return weakness_output(target, agent=agent, model=model, estimator=p, json_out=json_out, asked=weakness)
    if _is_run(target):
        kind, rows = "run", run_rows(target, p)
    else:
        kind, rows = "tasks", task_rows(expand_task_dirs([target]), p, extract_model, base_url)
    if json_out:
        info = {"estimator_info": p.describe()} if hasattr(p, "describe") else {}
        print_json({"kind": kind, "target": str(target.resolve()), "estimator": rows[0]["estimator"] if rows else p.name,
                    **info, "rows": rows})
        return
    est = rows[0]["estimator"] if rows else p.name
    table = Table(title=f"D_T of {target} (p_T estimator: {est})")
    cols = (["lineage", "gen", "dir"] if kind == "run" else ["task"]) + ["L", "novelty", "rarity", "D_T", "ξ"]
    for c in cols:
        table.add_column(c, overflow="fold", justify="right" if c in ("gen", "L", "novelty", "rarity", "D_T") else "left")
    for r in rows:
        head = [r["lineage"], str(r["generation"]), r["direction"] or "seed"] if kind == "run" else [r["task"]]
        table.add_row(*map(escape, head), str(r["L"]), f"{r['scenario_novelty']:.2f}", f"{r['skill_rarity']:.2f}",
                      f"{r['D_T']:.2f}", escape(r["xi"]))
    out.print(table)


# ---- --weakness ------------------------------------------------------------------------------------

def weakness_output(target: Path, *, agent: str | None, model: str | None, estimator: str | ReferenceDistribution,
                    json_out: bool, asked: bool = True) -> None:
    """`envevo difficulty RUN --weakness`: δ_θ per skill and per scenario from a model's rollouts."""
    from envevo.rollout import weakness
    from envevo.store import LineageStore

    if not asked:
        raise UserError("--agent and --model only apply with --weakness")
    if not _is_run(target):
        raise UserError(f"{target} is not a run (no store.sqlite); --weakness reads the rollouts of a RUN dir "
                        "(the --out of `envevo evolve`, rolled out with `envevo rollout RUN`)")
    with LineageStore.open(target, create=False) as store:
        rep = weakness(store, agent=agent, model=model, p=_p_t(estimator))
    if json_out:
        print_json({"kind": "weakness", "target": str(target.resolve()), **rep.model_dump(mode="json")})
        return
    from envevo.cli._common import err

    sim = " — SIMULATION" if rep.simulated else ""
    who = f"{rep.agent} / {rep.model or '-'}"
    errs = ", ".join(f"{k}:{v}" for k, v in sorted(rep.errors.items())) or "none"
    out.print(f"weakness of {escape(who)}{sim}: {rep.rollouts} rollouts on {rep.versions} versions, {rep.passed} passed, "
              f"{rep.attributed} failures attributed to a step, {rep.unattributed} unattributed (no per-step output); "
              f"errors: {escape(errs)}")
    out.print(escape(f"s̄ = {rep.s_bar:.3f} (pooled step success over {rep.observations} steps reached); prior {rep.prior}; "
                     f"d_T terms under p_T = {rep.estimator}; d_θ = d_T + log(s̄/ŝ), δ_θ = [log(s̄/ŝ)]_+ (nats)"))
    for title, rows, key, term in (("skill", rep.skills, "skill", "rarity −log p_T(κ|σ,g)"),
                                   ("scenario", rep.scenarios, "scenario", "novelty −log p_T(σ|g)")):
        table = Table(title=f"δ_θ per {title}: {who}{sim}")
        for c in (title, "n", "failed", "censored", "ŝ", f"d_T ({term})", "d_θ", "δ_θ"):
            table.add_column(c, overflow="fold", justify="left" if c == title else "right")
        for r in rows:
            table.add_row(escape(getattr(r, key) or "-"), str(r.n), str(r.failures), str(r.censored), f"{r.s_hat:.3f}",
                          f"{r.d_T:.2f}", f"{r.d_theta:.2f}", f"{r.delta:.2f}")
        out.print(table)
    if rep.simulated:
        err.print("simulated agents: this weakness is SIMULATION, not a model's")
