"""Verdicts: what each verifier concluded about a task, and why.

A report states its findings twice: typed (`findings`: which exploit or mutant, what kind of finding, the trial) for
code, and in words (`reasons`) for people and the Modifier. Code reads the findings, never the words. The findings
that are not skipped render as `reasons`, one each and in order; skipped ones as `notes`.

Reports made before findings existed (a stored row, an audit record, a verifier that gives only reasons) have none;
`VerifierReport.facts` then reads them back from the reasons, as the audit always did (`findings_from_reasons`).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.task import HostEnvNeed

_EVIDENCE_CHARS = 300  # a finding's evidence is one line; the reason carries the rest


class FindingKind(StrEnum):
    """What one finding says about the task."""

    BROKE = "broke"  # an exploit or a mutant scored above 0: the tests can be passed without solving the task
    FAILED = "failed"  # one of the verifier's own checks failed (the reference solution, the empty one, the build)
    INCONCLUSIVE = "inconclusive"  # no evidence either way: never a pass, and not the task's fault either
    SKIPPED = "skipped"  # an exploit that did not try (no model configured): a note, no finding against the task


class Finding(BaseModel):
    """One fact behind a verifier's verdict. (Not `envevo.verify.exploits.Finding`: that is a static exploit's raw
    evidence line, which a red-team finding quotes.)"""

    source: str = Field(description="the verifier that found it: oracle, invalid_test, red_team, mutation, …")
    kind: FindingKind
    exploit: str | None = Field(None, description="the exploit (red team) or mutant id (mutation verifier) behind it; "
                                                  "None for the verifier's own check")
    evidence: str = Field("", description="what shows it, in one short line")
    trial_dir: str | None = Field(None, description="the trial that shows it; None when no trial ran")
    error_kind: ErrorKind | None = Field(None, description="how that trial ended, when not with a clean reward")


def evidence_line(text: str) -> str:
    """The first line of `text`, cut to the length a finding keeps."""
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= _EVIDENCE_CHARS else line[: _EVIDENCE_CHARS - 1] + "…"


def trial_finding(source: str, kind: FindingKind, o: TrialOutcome, evidence: str, exploit: str | None = None) -> Finding:
    """A finding shown by the trial `o`."""
    return Finding(source=source, kind=kind, exploit=exploit, evidence=evidence_line(evidence),
                   trial_dir=str(o.trial_dir) if o.trial_dir else None,
                   error_kind=o.error_kind if o.error_kind is not ErrorKind.OK else None)


class VerifierReport(BaseModel):
    name: str
    passed: bool
    # No evidence either way (e.g. the test runner never ran): never a pass, and not the task's fault either.
    inconclusive: bool = False
    # Failed only by near misses the tests miss (surviving mutants): the task is weak, not wrong, unless judged
    # strictly (`Verdict.strict`).
    weak: bool = False
    reasons: list[str] = Field(default_factory=list)
    # What a user should know that is no finding against the task (an exploit skipped, and why). Not feedback: the
    # Modifier cannot act on it, and a retry's inputs must not depend on it.
    notes: list[str] = Field(default_factory=list)
    runs: list[TrialOutcome] = Field(default_factory=list)
    # Figures a verifier measured beside its verdict (the mutation verifier's score: killed, survived, score).
    metrics: dict[str, Any] = Field(default_factory=dict)
    # The reasons (and skipped exploits), typed: what code reads. Empty on reports made before findings existed.
    findings: list[Finding] = Field(default_factory=list)

    def facts(self) -> list[Finding]:
        """The findings; for a report that has reasons but no findings (made before findings existed, or by a
        verifier that gives only reasons), those its reasons state."""
        if self.findings or not self.reasons:
            return list(self.findings)
        return findings_from_reasons(self.name, self.reasons)

    def stated(self) -> list[tuple[str, Finding]]:
        """Each reason with the finding it renders."""
        shown = [f for f in self.facts() if f.kind is not FindingKind.SKIPPED]
        if len(shown) != len(self.reasons):  # reasons edited apart from their findings: read them again
            shown = findings_from_reasons(self.name, self.reasons)
        return list(zip(self.reasons, shown, strict=True))


def findings_from_reasons(source: str, reasons: list[str]) -> list[Finding]:
    """The findings a report's reasons state, read as the audit read them before reports carried findings: a red-team
    reason names its exploit before the first colon (then `inconclusive` or the hack), a mutation reason names its
    mutant, then `survived` or `inconclusive`. A reason that names none (no colon) is a plain failure."""
    return [_from_reason(source, r) for r in reasons]


def _from_reason(source: str, reason: str) -> Finding:
    head, sep, rest = reason.partition(":")
    after = rest.split(":", 1)[0].strip()
    kind, exploit = FindingKind.FAILED, None
    if source == "red_team" and sep:
        kind = FindingKind.INCONCLUSIVE if rest.lstrip().startswith("inconclusive") else FindingKind.BROKE
        exploit = head
    elif source == "mutation" and sep and after in ("survived", "inconclusive"):
        kind = FindingKind.BROKE if after == "survived" else FindingKind.INCONCLUSIVE
        exploit = head
    elif source not in ("red_team", "mutation") and "inconclusive:" in reason.split("\n", 1)[0]:
        kind = FindingKind.INCONCLUSIVE
    # The build failure a reason quotes (`explain_error` writes the kind's value), as collapse_unbuilt matched it.
    error = next((k for k in ErrorKind if k is not ErrorKind.OK and k.value in reason), None)
    return Finding(source=source, kind=kind, exploit=exploit, evidence=evidence_line(rest if exploit else reason),
                   error_kind=error)


class Unmet(BaseModel):
    """What keeps the task from being verified at all: a host variable its ``${VAR}`` templates name that the user did
    not pass (or passed but this host lacks). No trial ran: the verdict is inconclusive, never a fail."""

    needs: list[HostEnvNeed]

    def __str__(self) -> str:
        by_phase: dict[str, list[str]] = {}
        for n in self.needs:
            by_phase.setdefault(n.phase, []).append(n.var)
        return "; ".join(f"the {phase} needs {', '.join(dict.fromkeys(names))}" for phase, names in by_phase.items())

    @property
    def fix(self) -> str:
        """What the user does: pass the variable (tasks see none of the host's unless passed), or set one passed."""
        unset = list(dict.fromkeys(n.var for n in self.needs if n.passed))
        if unset:
            return f"export {' '.join(f'{v}=…' for v in unset)} on this host, then verify again"
        names = dict.fromkeys(n.var for n in self.needs)
        return (" ".join(f"--pass-env {v}" for v in names) + " (tasks see no host variable unless passed; or "
                "pass_env under [sandbox] in envevo.toml)")


class Verdict(BaseModel):
    task: str
    task_dir: Path
    ok: bool
    reports: dict[str, VerifierReport]
    # Base images replaced by local stand-ins for this run, each stated ("python:3.12-slim → Debian trixie, Python 3.13").
    substitutions: list[str] = Field(default_factory=list)
    # Set when the host cannot verify the task at all: no trial ran, and the status is inconclusive.
    unmet: Unmet | None = None
    # Judged strictly: a surviving near miss fails the task (envevo's own candidates, `--mutation strict`); else a
    # task whose only failing is near misses its tests miss is `weak`.
    strict: bool = False

    @property
    def status(self) -> str:
        """ok; fail (the task is wrong or hackable); inconclusive (the host lacks what the task needs, or some
        verifier had no evidence, and none failed outright); weak (oracle and empty solution right, but the tests
        miss a near miss that changes what they could see; never when `strict`)."""
        if self.ok:
            return "ok"
        if self.unmet is not None:
            return "inconclusive"
        failing = [r for r in self.reports.values() if not r.passed]
        if any(not r.inconclusive and (self.strict or not r.weak) for r in failing):
            return "fail"
        return "inconclusive" if any(r.inconclusive for r in failing) else "weak"

    @property
    def survivors(self) -> list[str]:
        """The near misses (mutant ids) the tests let through."""
        m = self.reports.get("mutation")
        return [f.exploit for f in m.facts() if f.kind is FindingKind.BROKE and f.exploit] if m is not None else []

    @property
    def reasons(self) -> list[str]:
        unmet = [f"inconclusive: {self.unmet} ({self.unmet.fix})"] if self.unmet is not None else []
        return unmet + [f"{name}: {r}" for name, rep in self.reports.items() for r in rep.reasons]

    def summary(self) -> dict:
        """The JSON shape `envevo verify --json` prints: one object per task, a key per verifier."""
        out: dict = {"task": self.task, "task_dir": str(self.task_dir), "ok": self.ok, "status": self.status,
                     "substitutions": self.substitutions}
        if "mutation" in self.reports:  # the near misses the tests let through (what makes a task weak), and those
            metrics = self.reports["mutation"].metrics  # that could not be told from the solution at all
            out["survivors"] = self.survivors
            out["equivalent"] = list(metrics.get("equivalent_mutants") or [])
        if self.unmet is not None:
            out["unmet"] = {"reason": str(self.unmet), "fix": self.unmet.fix,
                            "needs": [n.model_dump() for n in self.unmet.needs]}
        for name, rep in self.reports.items():
            out[name] = {
                "passed": rep.passed,
                "inconclusive": rep.inconclusive,
                "weak": rep.weak,
                "reasons": rep.reasons,
                "notes": rep.notes,
                "findings": [f.model_dump(mode="json") for f in rep.findings],
                "runs": [r.model_dump(mode="json") for r in rep.runs],
            }
            if rep.metrics:
                out[name]["metrics"] = rep.metrics
        return out
