"""Verdicts: what each verifier concluded about a task, and why."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from envevo.runtime import TrialOutcome


class VerifierReport(BaseModel):
    name: str
    passed: bool
    # No evidence either way (e.g. the test runner never ran): never a pass, and not the task's fault either.
    inconclusive: bool = False
    reasons: list[str] = Field(default_factory=list)
    # What a user should know that is no finding against the task (an exploit skipped, and why). Not feedback: the
    # Modifier cannot act on it, and a retry's inputs must not depend on it.
    notes: list[str] = Field(default_factory=list)
    runs: list[TrialOutcome] = Field(default_factory=list)


class Verdict(BaseModel):
    task: str
    task_dir: Path
    ok: bool
    reports: dict[str, VerifierReport]
    # Base images replaced by local stand-ins for this run, each stated ("python:3.12-slim → Debian trixie, Python 3.13").
    substitutions: list[str] = Field(default_factory=list)

    @property
    def status(self) -> str:
        """ok, fail, or inconclusive (some verifier had no evidence and none failed outright)."""
        if self.ok:
            return "ok"
        failed = [r for r in self.reports.values() if not r.passed and not r.inconclusive]
        return "fail" if failed else "inconclusive"

    @property
    def reasons(self) -> list[str]:
        return [f"{name}: {r}" for name, rep in self.reports.items() for r in rep.reasons]

    def summary(self) -> dict:
        """The JSON shape `envevo verify --json` prints: one object per task, a key per verifier."""
        out: dict = {"task": self.task, "task_dir": str(self.task_dir), "ok": self.ok, "status": self.status,
                     "substitutions": self.substitutions}
        for name, rep in self.reports.items():
            out[name] = {
                "passed": rep.passed,
                "inconclusive": rep.inconclusive,
                "reasons": rep.reasons,
                "notes": rep.notes,
                "runs": [r.model_dump(mode="json") for r in rep.runs],
            }
        return out
