"""Verdicts: what each verifier concluded about a task, and why."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from envevo.runtime import TrialOutcome


class VerifierReport(BaseModel):
    name: str
    passed: bool
    reasons: list[str] = Field(default_factory=list)
    runs: list[TrialOutcome] = Field(default_factory=list)


class Verdict(BaseModel):
    task: str
    task_dir: Path
    ok: bool
    reports: dict[str, VerifierReport]

    @property
    def reasons(self) -> list[str]:
        return [f"{name}: {r}" for name, rep in self.reports.items() for r in rep.reasons]

    def summary(self) -> dict:
        """The JSON shape `envevo verify --json` prints: one object per task, a key per verifier."""
        out: dict = {"task": self.task, "task_dir": str(self.task_dir), "ok": self.ok}
        for name, rep in self.reports.items():
            out[name] = {
                "passed": rep.passed,
                "reasons": rep.reasons,
                "runs": [r.model_dump(mode="json") for r in rep.runs],
            }
        return out
