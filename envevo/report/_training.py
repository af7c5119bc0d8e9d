"""The report's training section: the curriculum a trainer followed, read from ``RUN/training/*.jsonl``.

Each file is a trainer adapter's step log (envevo/trainers/_steplog.py, one JSON line per step). The
report reads it as plain JSON: the trainers sit on a higher floor. A line that does not parse is counted and
skipped, never trusted.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

MAX_STEPS = 200  # rows shown per log; a longer run says how many were left out


def _e(text: object) -> str:
    return html.escape(str(text))


def _read(path: Path) -> tuple[list[dict[str, Any]], int]:
    steps, bad = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(row, dict) and isinstance(row.get("groups"), list):
            steps.append(row)
        elif line.strip():
            bad += 1
    return steps, bad


def _group(g: dict[str, Any]) -> str:
    verdict = " → passed" if g.get("advanced") else " (late)" if g.get("late") else ""
    rewards = g.get("rewards") or []
    return _e(f"{g.get('lineage')} g{g.get('generation')}: {g.get('passes')}/{len(rewards)}{verdict}")


def training_sections(run_dir: Path) -> list[str]:
    """HTML for every step log of the run, or nothing when the run has none."""
    logs = sorted((run_dir / "training").glob("*.jsonl")) if (run_dir / "training").is_dir() else []
    parts: list[str] = []
    for path in logs:
        steps, bad = _read(path)
        if not steps and not bad:
            continue
        first = (steps[0].get("scheduler") or {}) if steps else {}
        parts.append(f"<h2>Training curriculum <code>{_e(path.name)}</code></h2>")
        parts.append("<p class='muted'>Per trainer step: the prompt groups (lineage, generation, passes of the group "
                     "size; → passed: the group moved its lineage on) and, after them, the generation each lineage's "
                     f"frontier is at (done: every generation passed). Scheduler {_e(first.get('name'))}, "
                     f"B = {_e(first.get('group_size'))}, τ = {_e(first.get('tau'))}."
                     + (f" {bad} unreadable line(s) skipped." if bad else "") + "</p>")
        rows = []
        for s in steps[:MAX_STEPS]:
            frontier = (s.get("scheduler") or {}).get("lineages") or {}
            rows.append(f"<tr><td>{_e(s.get('step'))}</td><td>{'<br>'.join(_group(g) for g in s['groups'])}</td><td>"
                        + _e(", ".join(f"{k}: {'done' if v is None else f'g{v}'}" for k, v in frontier.items()))
                        + "</td></tr>")
        parts.append("<table><tr><th>step</th><th>groups</th><th>lineage frontiers after</th></tr>"
                     + "".join(rows) + "</table>")
        if len(steps) > MAX_STEPS:
            parts.append(f"<p class='muted'>… {len(steps) - MAX_STEPS} more steps in {_e(path)}.</p>")
    return parts
