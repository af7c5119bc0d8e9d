"""How a task is shown to a model: its files as text, most telling first, within a size budget.

The order is by importance: the instruction, then the Dockerfile (or compose file), then the tests, then the
solution, then task.toml and the rest of the environment. The files that define the task are shown up to
`max_file_chars` each; the rest (fixtures, data, helper files) only as a preview of `preview_chars`, since their
bulk says little a model can use. Once `max_total_chars` is spent, further files are listed with their size and
not shown, and binary files are always only listed: a large fixture cannot crowd out the files that define the
task, and a 15-file task costs a bounded prompt on every one-shot call.
"""

from __future__ import annotations

from envevo.task import Task, component_of
from envevo.trace import Trace

MAX_FILE_CHARS = 8_000
PREVIEW_CHARS = 4_000
MAX_TOTAL_CHARS = 32_000
_BUILD_FILES = ("environment/Dockerfile", "environment/docker-compose.yaml", "environment/docker-compose.yml",
                "environment/compose.yaml", "environment/compose.yml")
_RANK = {"instruction": 0, "verification": 2, "solution": 3, "config": 4, "environment": 5}


def importance(path: str) -> int:
    """0 instruction, 1 Dockerfile or compose file, 2 tests, 3 solution, 4 task.toml, 5 the rest of environment/."""
    return 1 if path in _BUILD_FILES else _RANK.get(component_of(path), 6)


def render_task(task: Task, *, max_file_chars: int = MAX_FILE_CHARS, preview_chars: int = PREVIEW_CHARS,
                max_total_chars: int = MAX_TOTAL_CHARS) -> str:
    files = task.render_files()
    paths = sorted(files, key=lambda p: (importance(p), p))
    parts = [f"Task `{task.name}`: {len(paths)} files, most important first."]
    used = 0
    for path in paths:
        f = files[path]
        text = f.text()
        size = len(f.data)
        mode = " (executable)" if f.executable else ""
        if text is None:
            parts.append(f"\n### {path}{mode}\n[binary file, {size} bytes, not shown]")
            continue
        cap = max_file_chars if importance(path) <= 3 else preview_chars
        room = max_total_chars - used
        if room < min(len(text), 400):
            parts.append(f"\n### {path}{mode}\n[{size} bytes, not shown: the prompt's size budget is spent]")
            continue
        limit = min(cap, room)
        shown = text if len(text) <= limit else text[:limit] + f"\n[… cut: {len(text)} characters in all]"
        used += min(len(text), limit)
        parts.append(f"\n### {path}{mode}\n```\n{shown}\n```")
    return "\n".join(parts)


def render_trace(trace: Trace) -> str:
    lines = [f"goal: {trace.goal}"]
    lines += [f"{i}. scenario: {s.scenario} | skill: {s.skill}" for i, s in enumerate(trace.steps, 1)]
    lines.append(f"final scenario: {trace.final or '-'}")
    return "\n".join(lines)
