"""Verdicts: what each verifier concluded about a task, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envevo.runtime import TrialOutcome
from envevo.task import HostEnvNeed


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
    # Figures a verifier measured beside its verdict (the mutation verifier's score: killed, survived, score).
    metrics: dict[str, Any] = Field(default_factory=dict)


class Unmet(BaseModel):
    """What this host lacks for the task to be verified at all (a host variable its ``${VAR}`` templates name). No trial
    ran: the verdict is inconclusive, never a fail against the task."""

    needs: list[HostEnvNeed]

    def __str__(self) -> str:
        by_phase: dict[str, list[str]] = {}
        for n in self.needs:
            by_phase.setdefault(n.phase, []).append(n.var)
        return "; ".join(f"the {phase} needs {', '.join(dict.fromkeys(names))}" for phase, names in by_phase.items())

    @property
    def fix(self) -> str:
        names = " ".join(f"{v}=…" for v in dict.fromkeys(n.var for n in self.needs))
        return f"export {names} on this host, then verify again"


class Verdict(BaseModel):
    task: str
    task_dir: Path
    ok: bool
    reports: dict[str, VerifierReport]
    # Base images replaced by local stand-ins for this run, each stated ("python:3.12-slim → Debian trixie, Python 3.13").
    substitutions: list[str] = Field(default_factory=list)
    # Set when the host cannot verify the task at all: no trial ran, and the status is inconclusive.
    unmet: Unmet | None = None

    @property
    def status(self) -> str:
        """ok, fail, or inconclusive (the host lacks what the task needs, or some verifier had no evidence and none
        failed outright)."""
        if self.ok:
            return "ok"
        if self.unmet is not None:
            return "inconclusive"
        failed = [r for r in self.reports.values() if not r.passed and not r.inconclusive]
        return "fail" if failed else "inconclusive"

    @property
    def reasons(self) -> list[str]:
        unmet = [f"inconclusive: {self.unmet} ({self.unmet.fix})"] if self.unmet is not None else []
        return unmet + [f"{name}: {r}" for name, rep in self.reports.items() for r in rep.reasons]

    def summary(self) -> dict:
        """The JSON shape `envevo verify --json` prints: one object per task, a key per verifier."""
        out: dict = {"task": self.task, "task_dir": str(self.task_dir), "ok": self.ok, "status": self.status,
                     "substitutions": self.substitutions}
        if self.unmet is not None:
            out["unmet"] = {"reason": str(self.unmet), "fix": self.unmet.fix,
                            "needs": [n.model_dump() for n in self.unmet.needs]}
        for name, rep in self.reports.items():
            out[name] = {
                "passed": rep.passed,
                "inconclusive": rep.inconclusive,
                "reasons": rep.reasons,
                "notes": rep.notes,
                "runs": [r.model_dump(mode="json") for r in rep.runs],
            }
            if rep.metrics:
                out[name]["metrics"] = rep.metrics
        return out
