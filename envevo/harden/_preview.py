"""What `envevo harden` would fix in a task, said before any container runs: read from its files by the static scan
(and from a verdict the caller already has), never from the proof. `audit` and `seeds select` show it per task.

The preview is a forecast, not a proof: `harden` itself runs the reference solution to choose the artifacts and
proves the copy; a task the preview calls fixable can still come out `not hardened` (its copy fails its proof)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from envevo.harden._keep import unseen_outputs
from envevo.harden._rewrite import is_separate
from envevo.harden._scan import grading_downloads, live_probes
from envevo.task import Task

PreviewKind = Literal["fixable", "cannot", "nothing"]
_LISTED = 3


class HardenPreview(BaseModel):
    kind: PreviewKind  # fixable: harden would fix what `fixes` names; cannot: `why`; nothing: already separate
    fixes: list[str] = []
    why: str = ""

    @property
    def text(self) -> str:
        if self.kind == "fixable":
            return "harden would fix: " + "; ".join(self.fixes)
        if self.kind == "cannot":
            return "harden cannot fix: " + self.why
        return "nothing for harden to fix: " + self.why


def _listed(items: Sequence[str]) -> str:
    more = f" and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return ", ".join(items[:_LISTED]) + more


def preview_harden(task: Task, *, broken_by: Sequence[str] = (), oracle_fails: bool = False) -> HardenPreview:
    """What harden would do to `task`. `broken_by`/`oracle_fails`: from a verdict the caller has (audit's record)."""
    if oracle_fails:
        return HardenPreview(kind="cannot", why="the reference solution fails its own tests (nothing to learn from)")
    if probes := live_probes(task):
        p = probes[0]
        return HardenPreview(kind="cannot", why=f"the tests query {p.what} ({p.file}:{p.line}), a process the solution "
                             "leaves running, which a separate verifier cannot see; test a file the solution writes")
    if is_separate(task):
        if broken_by:
            return HardenPreview(kind="cannot", why=f"the tests already run in a separate verifier, yet "
                                 f"{_listed(list(broken_by))} broke it: a lenient grader; tighten the tests")
        return HardenPreview(kind="nothing", why="the tests already run in a separate verifier")
    fixes = ["tests to a separate verifier"]
    outputs = sorted(unseen_outputs(task))
    fixes.append(f"artifacts inferred ({_listed(outputs)} named by the tests)" if outputs
                 else "artifacts inferred from the solution's run (the tests name no file it writes)")
    downloads = [d for path in sorted(p for p in task.files if p.startswith("tests/") and p.endswith(".sh"))
                 for d in grading_downloads(task.read_text(path), path)]
    moved = [d for d in downloads if d.action != "kept" and d.kind not in ("venv", "path-setup")]
    kept = [d for d in downloads if d.action == "kept" and d.kind != "offline"]
    if moved and task.has("environment/Dockerfile"):
        fixes.append(f"{len(moved)} test-time download(s) to build time ({', '.join(sorted({d.kind for d in moved}))})")
    elif moved:
        fixes.append("the verifier keeps its network for the tests' downloads (the environment is an image, not a "
                     "Dockerfile)")
    if kept:
        fixes.append(f"the verifier keeps its network for {kept[0].file}:{kept[0].line} ({kept[0].note})")
    return HardenPreview(kind="fixable", fixes=fixes)
