"""Per-component diff between two tasks."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, Field, PlainSerializer, computed_field

from envevo.task._components import COMPONENTS, Component, component_of
from envevo.task._files import TaskFile, decode_text
from envevo.task._model import Task

ChangeKind = Literal["added", "removed", "modified"]
# A set in Python, a list in canonical component order in JSON (stable output for scripts).
ComponentSet = Annotated[set[Component], PlainSerializer(lambda s: [c for c in COMPONENTS if c in s], return_type=list[str])]


class FileChange(BaseModel):
    """One file that differs. ``diff`` is a unified diff for text, or a one-line note."""

    path: str
    component: Component
    kind: ChangeKind
    binary: bool = False
    diff: str = ""


class ComponentDiff(BaseModel):
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)


class TaskDiff(BaseModel):
    """What changed from task ``a`` to task ``b``, file by file and component by component."""

    changes: list[FileChange] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mutated(self) -> ComponentSet:
        """Names of the components with at least one changed file."""
        return {c.component for c in self.changes}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def components(self) -> dict[Component, ComponentDiff]:
        """Changed components only, in canonical order."""
        out: dict[Component, ComponentDiff] = {}
        for name in COMPONENTS:
            mine = [c for c in self.changes if c.component == name]
            if mine:
                out[name] = ComponentDiff(
                    added=[c.path for c in mine if c.kind == "added"],
                    removed=[c.path for c in mine if c.kind == "removed"],
                    modified=[c.path for c in mine if c.kind == "modified"],
                )
        return out

    @property
    def empty(self) -> bool:
        return not self.changes

    def only(self, components: Iterable[Component]) -> TaskDiff:
        keep = set(components)
        return TaskDiff(changes=[c for c in self.changes if c.component in keep])


def diff_tasks(a: Task, b: Task, *, context: int = 3) -> TaskDiff:
    """Diff the files of ``a`` and ``b`` as they would be saved (task.toml included)."""
    fa, fb = a.render_files(), b.render_files()
    changes: list[FileChange] = []
    for path in sorted(set(fa) | set(fb)):
        old, new = fa.get(path), fb.get(path)
        if old == new:
            continue
        kind: ChangeKind = "added" if old is None else "removed" if new is None else "modified"
        changes.append(_file_change(path, kind, old, new, context))
    return TaskDiff(changes=changes)


def files_kept(a: Task, b: Task) -> dict[Component, tuple[int, int]]:
    """Per component of ``b``: how many of its files are byte-identical to ``a``'s at the same path, out of how many.
    The residue of an edit, finer than ``mutated``: a component with one changed file out of ten is mutated."""
    fa, fb = a.render_files(), b.render_files()
    out: dict[Component, tuple[int, int]] = {}
    for path, new in fb.items():
        kept, total = out.get(component_of(path), (0, 0))
        out[component_of(path)] = (kept + (fa.get(path) == new), total + 1)
    return out


def _file_change(path: str, kind: ChangeKind, old: TaskFile | None, new: TaskFile | None, context: int) -> FileChange:
    old_text = decode_text(old.data) if old is not None else ""
    new_text = decode_text(new.data) if new is not None else ""
    component = component_of(path)
    if old_text is None or new_text is None:
        return FileChange(path=path, component=component, kind=kind, binary=True, diff=f"binary file {path} differs")
    notes = []
    if old is not None and new is not None and old.executable != new.executable:
        notes.append(f"mode {_mode(old)} -> {_mode(new)}")
    lines = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
        n=context,
    )
    body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return FileChange(path=path, component=component, kind=kind, diff="".join(f"{n}\n" for n in notes) + body)


def _mode(f: TaskFile) -> str:
    return "755" if f.executable else "644"
