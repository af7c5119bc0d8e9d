"""`envevo difficulty TASK|RUN`: ξ, L, scenario novelty, skill rarity and D_T under a named p_T estimator."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, err, is_run_dir, out, print_json, renamed, usage_table, user_errors
from envevo.errors import UserError
from envevo.trace import ReferenceDistribution


def __getattr__(name: str):
    """`task_rows` and `run_rows` live in envevo.analysis; scripts import them from here too (loaded on use)."""
    if name in ("task_rows", "run_rows"):
        import envevo.analysis

        return getattr(envevo.analysis, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_estimator(name: str, **options: Any) -> ReferenceDistribution:
    """p_T `name` with its command-line options; its notes (e.g. corpus tasks skipped) go to stderr."""
    from envevo.trace import estimator

    return _noted(estimator(name, flag_names={"model": "--reference-model", "method": "--llm-method"}, **options))


def choose_estimator(target: Path, name: str | None, **options: Any) -> ReferenceDistribution:
    """`--estimator name`; without one, a run is recomputed under the p_T it recorded (an LLM-engine run under
    the LLM engine's label prior, not the catalog), anything else under catalog."""
    if name is None and is_run_dir(target):
        from envevo.evolve import recorded_run_estimators, run_estimator

        if recorded_run_estimators(target):
            # Options given as None would override what the recorded name says (the llm estimator's method).
            return _noted(run_estimator(target, **{k: v for k, v in options.items() if v is not None}))
        # A run with nothing recorded yet (only its seed, or rollouts only) has nothing to agree with.
    return build_estimator(name or "catalog", **options)


def _noted(p: ReferenceDistribution) -> ReferenceDistribution:
    for note in getattr(p, "notes", None) or []:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    return p


@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def difficulty(
    target: Annotated[Path, typer.Argument(help="A task dir, a folder of task dirs, or a RUN dir (`envevo evolve "
                                           "--run`).")],
    json_out: o.Json = False,
    estimator: Annotated[str | None, typer.Option("--estimator", help="p_T estimator: catalog (the procedural "
                                                  "engine's priors), corpus (label frequencies over --corpus), llm (a "
                                                  "reference model's probabilities), llm-label (the LLM engine's "
                                                  "prior). Default: a RUN's own recorded estimator, else catalog.")
                         ] = None,
    corpus: Annotated[list[Path] | None, typer.Option("--corpus", help="With --estimator corpus: reference tasks (task "
                                                      "dirs, folders of them, RUN dirs); repeat for more.")] = None,
    embedding_model: Annotated[Path | None, typer.Option("--embedding-model", help="With --estimator corpus: a local "
                                                         "sentence-transformers BERT model dir (default: "
                                                         "all-MiniLM-L6-v2).")] = None,
    reference_model: Annotated[str | None, typer.Option("--reference-model", rich_help_panel=o.LLM, help="With "
                                                        "--estimator llm: the reference model, PROVIDER:NAME or with "
                                                        "--base-url the served name (default: model under [llm] in "
                                                        "envevo.toml).")] = None,
    base_url: o.BaseUrl = None,
    llm_method: Annotated[str | None, typer.Option("--llm-method", rich_help_panel=o.LLM, help="With --estimator llm: "
                                                   "auto (default), logprobs (score labels via /v1/completions echo) "
                                                   "or judgement (ask via chat).")] = None,
    extract_model: Annotated[str | None, typer.Option("--extract-model", rich_help_panel=o.LLM, help="For tasks "
                                                      "without ξ in [metadata.envevo]: extract it with this model "
                                                      "(PROVIDER:NAME, the LLM engine's Proposer; --base-url for an "
                                                      "OpenAI-compatible endpoint).")] = None,
    weakness: Annotated[bool, typer.Option("--weakness", help="RUN only: a model's weakness δ_θ = [d_θ − d_T]_+ per "
                                           "skill and scenario, estimated from its recorded rollouts (`envevo rollout "
                                           "RUN`).")] = False,
    agent: o.ByAgent = None,
    model: o.ByModel = None,
    old_agent: Annotated[str | None, o.old_spelling("--agent", "--by-agent")] = None,
    old_model: Annotated[str | None, o.old_spelling("--model", "--by-model")] = None,
) -> None:
    """Model-free difficulty D_T = Σ [−log p_T(σ|g) − log p_T(κ|σ,g)] of tasks, or of every generation of a run."""
    from envevo.llm import litellm_model, normalize_model

    agent = renamed(old_agent, agent, "difficulty --agent (whose rollouts)", "--by-agent")
    model = renamed(old_model, model, "difficulty --model (whose rollouts)", "--by-model")
    if not target.exists():
        raise UserError(f"{target} does not exist; pass a task dir or a run dir (`envevo evolve --run`)")
    # --base-url serves --extract-model on tasks; p_T takes it when it is llm, or may be (a run's recorded one).
    llm_url = base_url if estimator == "llm" or (estimator is None and is_run_dir(target)) else None
    p = choose_estimator(target, estimator, corpus=corpus, embedding_model=embedding_model, method=llm_method,
                         base_url=llm_url,
                         model=normalize_model(reference_model, base_url=llm_url) if reference_model else None)
    if weakness or agent is not None or model is not None:
        return weakness_output(target, agent=agent, model=litellm_model(model) if model else None, estimator=p,
                               json_out=json_out, asked=weakness)
    kind, rows, records = _rows(target, p, extract_model, base_url, json_out)
    _print_rows(target, kind, rows, p, model_usage(records, p), json_out)


def _rows(target: Path, p: ReferenceDistribution, extract_model: str | None, base_url: str | None,
          json_out: bool) -> tuple[str, list[dict[str, Any]], list]:
    """("run" or "tasks", D_T rows, the extraction's metered calls). A failed extraction (or Ctrl-C) spent tokens
    all the same: they are shown before the error goes on."""
    from envevo.analysis import run_rows, task_rows
    from envevo.task import expand_task_dirs

    records: list = []  # the extraction's metered calls
    try:
        if is_run_dir(target):
            kind, rows = "run", run_rows(target, p)
        else:
            # the one event loop of this command: extraction asks a model
            kind, rows = "tasks", asyncio.run(task_rows(expand_task_dirs([target]), p, extract_model, base_url,
                                                        usage=records))
    except BaseException as e:  # a failed extraction (or Ctrl-C) spent tokens all the same: show them, then the error
        spent = model_usage(records, p)
        if spent and json_out:
            print_json({"kind": "error", "target": str(target.resolve()), "error": str(e) or type(e).__name__,
                        "usage": spent})
        elif spent:
            err.print(usage_table("LLM usage (the command failed; these tokens were spent)", spent))
        raise
    return kind, rows, records


def _print_rows(target: Path, kind: str, rows: list[dict[str, Any]], p: ReferenceDistribution,
                usage: list[dict[str, Any]], json_out: bool) -> None:
    """D_T per task (or per version of a run) as --json's document, or as a table with the model's usage."""
    if json_out:
        info = {"estimator_info": p.describe()} if hasattr(p, "describe") else {}
        print_json({"kind": kind, "target": str(target.resolve()), "estimator": rows[0]["estimator"] if rows else p.name,
                    **info, "rows": rows, "usage": usage})
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
    if usage:
        out.print(usage_table("LLM usage", usage))


def model_usage(records: list, p: ReferenceDistribution) -> list[dict[str, Any]]:
    """Calls, tokens and cost per role and model of every model this command asked: the extraction's metered records
    and the p_T estimator's (its meter's records; else its request count, tokens unknown, not 0)."""
    from envevo.llm import usage_rows

    meter = getattr(p, "meter", None)
    usage = usage_rows([*records, *getattr(meter, "records", ())])
    requests = getattr(p, "requests", None)
    if meter is None and isinstance(requests, int) and requests:
        usage.append({"role": "p_T estimator", "model": getattr(p, "model", None), "calls": requests,
                      "input_tokens": None, "output_tokens": None, "cost_usd": None})
    return usage


# ---- --weakness ------------------------------------------------------------------------------------

def weakness_output(target: Path, *, agent: str | None, model: str | None, estimator: ReferenceDistribution,
                    json_out: bool, asked: bool = True) -> None:
    """`envevo difficulty RUN --weakness`: δ_θ per skill and per scenario from a model's rollouts."""
    from envevo.rollout import weakness
    from envevo.store import LineageStore

    if not asked:
        raise UserError("--by-agent and --by-model only apply with --weakness")
    if not is_run_dir(target):
        raise UserError(f"{target} is not a run (no store.sqlite); --weakness reads the rollouts of a RUN dir "
                        "(`envevo evolve --run RUN`, rolled out with `envevo rollout RUN`)")
    with LineageStore.open(target, create=False) as store:
        rep = weakness(store, agent=agent, model=model, p=estimator)
    usage = model_usage([], estimator)  # d_T under an llm p_T asks a model
    if json_out:
        print_json({"kind": "weakness", "target": str(target.resolve()), **rep.model_dump(mode="json"), "usage": usage})
        return
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
    if usage:
        out.print(usage_table("LLM usage", usage))
    if rep.simulated:
        err.print("simulated agents: this weakness is SIMULATION, not a model's")

