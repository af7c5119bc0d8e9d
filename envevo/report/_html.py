"""`envevo report RUN`: one self-contained HTML page about a run's lineages."""

from __future__ import annotations

import html
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from envevo.analysis import drift_note, killed_text, mutant_scores, mutation_rates, unmeasured
from envevo.report._plots import difficulty_plot, drift_plot, generations_plot, mutation_plot, validity_plot
from envevo.report._training import training_sections
from envevo.store import LineageStore
from envevo.task import diff_tasks

MAX_DIFF_LINES = 400
RATE_COMPONENTS = ["instruction", "environment", "verification", "solution"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em} td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}
th{background:#f4f4f4} img{max-width:100%} code,pre{font-size:.82em}
pre{background:#f8f8f8;padding:.6em;overflow-x:auto;max-height:30em}
.add{color:#116611}.del{color:#aa1111}.hunk{color:#555}.muted{color:#777}
details{margin:.3em 0} summary{cursor:pointer}
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _diff_html(text: str) -> str:
    lines = text.splitlines()
    cut = len(lines) > MAX_DIFF_LINES
    out = []
    for line in lines[:MAX_DIFF_LINES]:
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else "hunk" if line.startswith("@@") else ""
        out.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    if cut:
        out.append(f'<span class="muted">… {len(lines) - MAX_DIFF_LINES} more lines</span>')
    return "<pre>" + "\n".join(out) + "</pre>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _f(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def _evaluation(study) -> list[str]:
    """The paper's analyses (Figure 3, Table 1, validity, claims) over every run of the report."""
    sim = " — SIMULATION (simulated agents, not models)" if study.simulated else ""
    parts = [f"<h2>Difficulty across generations{sim}</h2>",
             "<p class='muted'>Pass rate and mean turns per generation, averaged over the lineages evaluated at "
             "that generation; one column per effort, one curve per agent (the paper's Figure 3).</p>",
             f'<img alt="pass rate and turns per generation" src="{generations_plot([p.model_dump() for p in study.points])}">',
             _table(["agent", "effort", "generations", "pass rate per generation", "monotone", "zero from", "ρ(gen, pass)",
                     "turns first→last"],
                    [[_e(t.agent), _e(t.effort or "-"), f"g{t.generations[0]}–g{t.generations[-1]} ({len(t.generations)})",
                      _e(" ".join(f"{r:.2f}" for r in t.pass_rates)), "yes" if t.monotone else f"no ({t.rises} rises)",
                      "-" if t.zero_at is None else f"g{t.zero_at}", _f(t.rho_generation),
                      f"{_f(t.turns_first, '.1f')} → {_f(t.turns_last, '.1f')}"] for t in study.trends])]
    parts.append(f"<h2>Direction effects{sim}</h2>")
    if study.directions:
        parts.append("<p class='muted'>Per step (a version against its parent, same agent): mean change of pass rate "
                     "and turns with 95% intervals, D_T gain, and the fraction of steps that changed each component "
                     "(the paper's Table 1). Single step: seed → generation 1 only.</p>")
        parts.append(_table(
            ["scope", "direction", "agent", "steps", "Δ pass rate", "Δ turns", "Δ D_T", *RATE_COMPONENTS, "total"],
            [[d.scope, d.direction, _e(d.agent), d.steps,
              _f(d.d_pass, "+.3f") + (f" ± {d.d_pass_ci:.3f}" if d.d_pass_ci is not None else ""),
              _f(d.d_turns, "+.1f") + (f" ± {d.d_turns_ci:.1f}" if d.d_turns_ci is not None else ""), _f(d.d_DT, "+.2f"),
              *(f"{d.mutation[c]:.2f}" for c in RATE_COMPONENTS), f"{d.total_mutation:.2f}"] for d in study.directions]))
    else:
        parts.append("<p class='muted'>No evaluated step: a version and its parent need rollouts of the same agent.</p>")
    parts.append(f"<h2>Validity of D_T{sim}</h2>")
    parts.append(f'<img alt="D_T against failure rate" src="{validity_plot([r.model_dump() for r in study.rows])}">')
    parts.append(_table(["agent", "n versions", "rollouts", "Spearman ρ(D_T, failure)", "p (permutation)", "ρ for L alone",
                         "ρ against the exact expected failure (simulation)", "p_T"],
                        [[_e(v.agent), v.n, v.rollouts, _f(v.rho, ".3f"), _f(v.p_value, ".4f"), _f(v.rho_L, ".3f"),
                          _f(v.rho_exact, ".3f"), _e(v.estimator or "-")] for v in study.validity]))
    parts.append(f"<h2>The paper's claims, here{sim}</h2>")
    verdict = {True: "holds", False: "does not hold", None: "not tested"}
    parts.append(_table(["claim", "verdict", "evidence"],
                        [[_e(c.claim), verdict[c.holds], _e(c.evidence)] for c in study.claims]))
    return parts


def build_report(run_dirs: Path | list[Path], out: Path | None = None) -> Path:
    """One page for one run, or for several (e.g. one per effort): their evaluation together, then each run."""
    from envevo.analysis import analyze

    runs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(r) for r in run_dirs]
    out = out or runs[0] / "report.html"
    with ExitStack() as stack:
        stores = [stack.enter_context(LineageStore.open(r, create=False)) for r in runs]
        study = analyze(stores)
        parts = [f"<h1>envevo {'run' if len(runs) == 1 else 'runs'} "
                 f"{', '.join(f'<code>{_e(r.resolve().name)}</code>' for r in runs)}</h1>"]
        if study.rows:
            parts += _evaluation(study)
        for run_dir, store in zip(runs, stores, strict=True):
            if len(runs) > 1:
                parts.append(f"<h2>Run <code>{_e(run_dir.resolve().name)}</code></h2>")
            parts += _run_sections(store)
            parts += training_sections(run_dir)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>envevo report</title>"
        f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>"
    )
    out.write_text(page, encoding="utf-8")
    return out


def _drift_section(store: LineageStore, lineages, config: dict) -> list[str]:
    """Semantic drift per generation: a curve per lineage, and the figures with what produced them."""
    parts = ["<h2>Semantic drift per generation</h2>"]
    if missing := len(unmeasured(store)):  # a report reads the store and never writes it: say what is missing
        parts.append(f"<p class='muted'>{_e(drift_note(missing, store.run_dir))}.</p>")
    series: dict[str, list[dict]] = {}
    measures: set[str] = set()
    table_rows = []
    for lin in lineages:
        rows: list[dict[str, Any]] = []  # the rows drift_plot takes
        for v in store.versions(lin.id):
            if v.drift is None:
                continue
            d = v.drift
            measures.add(d.measure)
            rows.append({"generation": v.generation, "drift_seed": d.drift_seed, "drift_parent": d.drift_parent,
                         "goal_drift_seed": round(1 - d.goal_seed, 4)})
        series[lin.id] = rows
        if rows:
            last = rows[-1]
            table_rows.append([_e(lin.id), f"g{last['generation']:02d}", f"{last['drift_seed']:.4f}",
                               f"{max(r['drift_seed'] for r in rows):.4f}", f"{last['goal_drift_seed']:.4f}",
                               _f(max((r["drift_parent"] for r in rows if r["drift_parent"] is not None), default=None), ".4f")])
    if not any(series.values()):
        return parts
    bound = config.get("max_drift")
    parts.append("<p class='muted'>Drift = 1 − cosine similarity of sentence embeddings: of the whole instruction "
                 "(paragraph chunks, token-weighted mean) and of the goal, to the seed's and to the parent's. "
                 + (f"The run's bound: --max-drift {_e(bound)} on the instruction drift from the seed; a candidate above it "
                    "is rejected and the Modifier told why. "
                    if bound is not None else "This run had no drift bound. ")
                 + f"Measured by {_e(', '.join(sorted(measures)))}.</p>")
    parts.append(f'<img alt="semantic drift per generation" src="{drift_plot(series, bound)}">')
    parts.append(_table(["lineage", "last", "instruction drift from seed", "max", "goal drift from seed",
                         "max drift from parent"], table_rows))
    return parts


def _run_sections(store: LineageStore) -> list[str]:
    lineages = store.lineages()
    config = store.run_config() or {}
    parts: list[str] = []
    parts.append(
        "<p class='muted'>D_T and its terms are exact: computed from each version's recorded ξ under the "
        f"engine's reference distribution. Settings: {_e(', '.join(f'{k}={v}' for k, v in config.items()))}</p>"
    )
    parts.append(_table(
        ["lineage", "seed", "status", "generations", "reason"],
        [[_e(lin.id), _e(lin.seed_name), _e(lin.status), lin.latest_generation, _e(lin.reason or "")] for lin in lineages],
    ))

    series: dict[str, list[dict]] = {}
    for lin in lineages:
        rows = []
        for v in store.versions(lin.id):
            if v.difficulty is not None:
                d = v.difficulty
                rows.append({"generation": v.generation, "L": d.L, "D_T": d.D_T,
                             "scenario_novelty": d.scenario_novelty, "skill_rarity": d.skill_rarity})
        series[lin.id] = rows
    parts.append("<h2>Difficulty per generation</h2>")
    if any(series.values()):
        parts.append(f'<img alt="D_T and its terms per generation" src="{difficulty_plot(series)}">')

    parts += _drift_section(store, lineages, config)

    stats = mutation_rates([store])
    parts.append("<h2>Mutation rates per component</h2>")
    gen_rows = [g.model_dump() for g in stats.generations]
    if gen_rows:
        parts.append(f'<img alt="mutation rates per generation" src="{mutation_plot(gen_rows, RATE_COMPONENTS)}">')
        parts.append(_table(
            ["generation", "n", *RATE_COMPONENTS, "total"],
            [[g["generation"], g["n"], *(f"{g['rates'][c]:.2f}" for c in RATE_COMPONENTS), f"{g['total']:.2f}"] for g in gen_rows],
        ))
    else:
        parts.append("<p class='muted'>No evolved generation yet.</p>")

    for lin in lineages:
        parts.append(f"<h2>Lineage {_e(lin.id)}</h2>")
        versions = store.versions(lin.id)
        killed = {g: killed_text(m) for g, m in mutant_scores(store, lin.id).items()}
        if killed:
            # The mutation verifier: near-miss solutions (a step done the plausible wrong way, or skipped) must fail.
            parts.append(_table(["generation", "near-miss solutions that scored 0 (mutation verifier)"],
                                [[f"g{v.generation:02d}", killed.get(v.generation) or "not run"] for v in versions]))
        for prev, cur in zip(versions, versions[1:], strict=False):
            before, after = prev.trace, cur.trace
            d0, d1 = prev.D_T, cur.D_T
            delta = f" (Δ {d1 - d0:+.2f})" if d0 is not None and d1 is not None else ""
            parts.append(
                f"<h3>g{cur.generation:02d} · {_e(cur.direction)} · {_e(cur.effort)} effort · "
                f"D_T {d1 if d1 is not None else '?'}{delta} · mutated: {_e(', '.join(cur.mutated) or 'none')}</h3>"
            )
            parts.append(_table(["", "ξ"], [
                ["before", f"<code>{_e(before.pretty() if before else '?')}</code>"],
                ["after", f"<code>{_e(after.pretty() if after else '?')}</code>"],
            ]))
            diff = diff_tasks(store.load_version_task(prev.task_hash), store.load_version_task(cur.task_hash))
            for component in diff.components:
                changes = [ch for ch in diff.changes if ch.component == component]
                if not changes:
                    continue
                body = "".join(
                    f"<div><code>{_e(ch.kind)} {_e(ch.path)}</code>{_diff_html(ch.diff) if ch.diff else ''}</div>"
                    for ch in changes
                )
                parts.append(f"<details><summary>{_e(component)}: {len(changes)} file(s) changed</summary>{body}</details>")
    return parts
