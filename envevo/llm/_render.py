"""How a task is shown to a model: its files as text, most telling first, within a size budget.

Instruction, config, tests and solution come before the environment; binary or oversized files are listed
with their size but not shown, so a large fixture cannot crowd out the files that define the task.
"""

from __future__ import annotations

from envevo.task import Task, component_of
from envevo.trace import Trace

_ORDER = {"instruction": 0, "config": 1, "verification": 2, "solution": 3, "environment": 4}


def render_task(task: Task, *, max_file_chars: int = 16_000, max_total_chars: int = 90_000) -> str:
    files = task.render_files()
    paths = sorted(files, key=lambda p: (_ORDER.get(component_of(p), 9), p))
    parts = [f"Task `{task.name}`: {len(paths)} files."]
    used = 0
    for path in paths:
        f = files[path]
        text = f.text()
        size = len(f.data)
        mode = " (executable)" if f.executable else ""
        if text is None:
            parts.append(f"\n### {path}{mode}\n[binary file, {size} bytes, not shown]")
            continue
        shown = text if len(text) <= max_file_chars else text[:max_file_chars] + f"\n[… truncated, {len(text)} chars in all]"
        if used + len(shown) > max_total_chars:
            parts.append(f"\n### {path}{mode}\n[{size} bytes, not shown: the prompt's size budget is spent]")
            continue
        used += len(shown)
        parts.append(f"\n### {path}{mode}\n```\n{shown}\n```")
    return "\n".join(parts)


def render_trace(trace: Trace) -> str:
    lines = [f"goal: {trace.goal}"]
    lines += [f"{i}. scenario: {s.scenario} | skill: {s.skill}" for i, s in enumerate(trace.steps, 1)]
    lines.append(f"final scenario: {trace.final or '-'}")
    return "\n".join(lines)
