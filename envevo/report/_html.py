"""`envevo report RUN`: one self-contained HTML page about a run's lineages."""

from __future__ import annotations

import html
from pathlib import Path

from envevo.report._plots import difficulty_plot, mutation_plot
from envevo.store import LineageStore, mutation_rates
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


def _table(headers: list[str], rows: list[list[object]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def build_report(run_dir: Path, out: Path | None = None) -> Path:
    store = LineageStore.open(run_dir, create=False)
    out = out or Path(run_dir) / "report.html"
    lineages = store.lineages()
    config = store.run_config() or {}
    parts = [f"<h1>envevo run <code>{_e(Path(run_dir).resolve().name)}</code></h1>"]
    parts.append(
        "<p class='muted'>D_T and its terms are exact: computed from each version's recorded ξ under the "
        f"engine's reference distribution. Settings: {_e(', '.join(f'{k}={v}' for k, v in config.items()))}</p>"
    )
    parts.append(_table(
        ["lineage", "seed", "status", "generations", "reason"],
        [[_e(l.id), _e(l.seed_name), _e(l.status), l.latest_generation, _e(l.reason or "")] for l in lineages],
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
        for prev, cur in zip(versions, versions[1:]):
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
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>envevo report</title>"
        f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>"
    )
    out.write_text(page, encoding="utf-8")
    return out
