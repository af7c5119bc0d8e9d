"""Verdicts: what each verifier concluded about a task, and why.

A report's findings are its one source of truth: each is typed (which exploit or mutant, what kind of finding, the
trial) for code, and carries its `text`, the reason people and the Modifier read. `reasons` renders the findings that
are not skipped, one each and in order; code reads the findings, never the words.

Rows stored by older versions (before findings carried their text, or before findings existed) are read once, when a
report is made from them: `stored_findings` is the one place a reason's wording is parsed.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field, model_validator

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.task import HostEnvNeed
from envevo.verify._plugins import MUTATION, RED_TEAM, spec_of

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
    text: str = Field("", description="the finding in words: the reason a report renders (with its evidence and "
                                      "logs), or for a skipped one why")


def finding(source: str, text: str, kind: FindingKind = FindingKind.FAILED, **typed: object) -> Finding:
    """A finding said by `text` (its evidence is the first line) with no trial behind it."""
    return Finding.model_validate({"source": source, "kind": kind, "evidence": evidence_line(text), "text": text,
                                   **typed})


def evidence_line(text: str) -> str:
    """The first line of `text`, cut to the length a finding keeps."""
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= _EVIDENCE_CHARS else line[: _EVIDENCE_CHARS - 1] + "…"


def trial_finding(source: str, kind: FindingKind, o: TrialOutcome, evidence: str, exploit: str | None = None,
                  text: str = "") -> Finding:
    """A finding shown by the trial `o`, said by `text` (the evidence line when none is given)."""
    return Finding(source=source, kind=kind, exploit=exploit, evidence=evidence_line(evidence),
                   trial_dir=str(o.trial_dir) if o.trial_dir else None, text=text or evidence,
                   error_kind=o.error_kind if o.error_kind is not ErrorKind.OK else None)


class VerifierReport(BaseModel):
    name: str
    passed: bool
    # No evidence either way (e.g. the test runner never ran): never a pass, and not the task's fault either.
    inconclusive: bool = False
    # Failed only by near misses the tests miss (surviving mutants): the task is weak, not wrong, unless judged
    # strictly (`Verdict.strict`).
    weak: bool = False
    # What a user should know that is no finding against the task (an exploit skipped, and why). Not feedback: the
    # Modifier cannot act on it, and a retry's inputs must not depend on it.
    notes: list[str] = Field(default_factory=list)
    runs: list[TrialOutcome] = Field(default_factory=list)
    # Figures a verifier measured beside its verdict (the mutation verifier's score: killed, survived, score).
    metrics: dict[str, Any] = Field(default_factory=dict)
    # What the verifier found, typed and in words: the one source of the report's reasons.
    findings: list[Finding] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_stored(cls, data: object) -> object:
        """A report as stored (or dumped) carries `reasons` beside its findings: they are the findings' texts, or for
        a row of an older version the words its findings are read from (`stored_findings`)."""
        if isinstance(data, dict) and "reasons" in data:
            data = dict(data)
            reasons = list(data.pop("reasons") or [])
            data["findings"] = stored_findings(str(data.get("name", "")), reasons, list(data.get("findings") or []))
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reasons(self) -> list[str]:
        """The findings that are not skipped, in words: what people and the Modifier read."""
        return [f.text for f in self.findings if f.kind is not FindingKind.SKIPPED]

    def facts(self) -> list[Finding]:
        """The findings."""
        return list(self.findings)

    def stated(self) -> list[tuple[str, Finding]]:
        """Each reason with the finding it renders."""
        return [(f.text, f) for f in self.findings if f.kind is not FindingKind.SKIPPED]


def stored_findings(source: str, reasons: list[str], findings: list[object]) -> list[Finding]:
    """The findings of a stored report, given its stored reasons: as they are when each carries its text; else (a row
    stored before findings carried their text) each paired with its reason in order, or, when there are none to
    pair (a row stored before findings existed, or reasons edited apart from them), read from the reasons' wording
    as the audit read them: a red-team reason names its exploit before the first colon (then `inconclusive` or the
    hack), a mutation reason names its mutant, then `survived` or `inconclusive`; a reason that names none (no colon)
    is a plain failure. The only place a reason's wording is parsed."""
    found = [Finding.model_validate(f) for f in findings]
    shown = [f for f in found if f.kind is not FindingKind.SKIPPED]
    if all(f.text for f in shown) and (shown or not reasons):  # the findings say it all: the reasons are theirs
        return found
    skipped = [f for f in found if f.kind is FindingKind.SKIPPED]
    if len(shown) == len(reasons):
        said = iter(reasons)
        return [f if f.kind is FindingKind.SKIPPED else f.model_copy(update={"text": next(said)}) for f in found]
    return [_from_reason(source, r) for r in reasons] + skipped


def _from_reason(source: str, reason: str) -> Finding:
    head, sep, rest = reason.partition(":")
    after = rest.split(":", 1)[0].strip()
    kind, exploit = FindingKind.FAILED, None
    if source == RED_TEAM and sep:
        kind = FindingKind.INCONCLUSIVE if rest.lstrip().startswith("inconclusive") else FindingKind.BROKE
        exploit = head
    elif source == MUTATION and sep and after in ("survived", "inconclusive"):
        kind = FindingKind.BROKE if after == "survived" else FindingKind.INCONCLUSIVE
        exploit = head
    elif source not in (RED_TEAM, MUTATION) and "inconclusive:" in reason.split("\n", 1)[0]:
        kind = FindingKind.INCONCLUSIVE
    # The build failure a reason quotes (`explain_error` writes the kind's value), as collapse_unbuilt matched it.
    error = next((k for k in ErrorKind if k is not ErrorKind.OK and k.value in reason), None)
    return Finding(source=source, kind=kind, exploit=exploit, evidence=evidence_line(rest if exploit else reason),
                   error_kind=error, text=reason)


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
        return [f.exploit for rep in self._weakening() for f in rep.findings if f.kind is FindingKind.BROKE and f.exploit]

    def _weakening(self) -> list[VerifierReport]:
        """The reports of the verifiers whose findings make a task weak, not wrong (the mutation verifier)."""
        return [rep for name, rep in self.reports.items() if (spec := spec_of(name)) is not None and spec.weakens]

    def naming(self, task_dir: Path) -> Verdict:
        """This verdict with the fixes its findings suggest (`--tasks <dir>`) naming `task_dir`, the dir a user knows,
        instead of the runnable copy the trials ran."""
        said, shown = f"--tasks {self.task_dir}", f"--tasks {task_dir}"
        return self.model_copy(update={"reports": {name: rep.model_copy(update={"findings": [
            f.model_copy(update={"text": f.text.replace(said, shown)}) for f in rep.findings]})
            for name, rep in self.reports.items()}})

    @property
    def reasons(self) -> list[str]:
        unmet = [f"inconclusive: {self.unmet} ({self.unmet.fix})"] if self.unmet is not None else []
        return unmet + [f"{name}: {r}" for name, rep in self.reports.items() for r in rep.reasons]

    def summary(self) -> dict:
        """The JSON shape `envevo verify --json` prints: one object per task, a key per verifier."""
        out: dict = {"task": self.task, "task_dir": str(self.task_dir), "ok": self.ok, "status": self.status,
                     "substitutions": self.substitutions}
        if weakening := self._weakening():  # the near misses the tests let through (what makes a task weak), and
            out["survivors"] = self.survivors  # those that could not be told from the solution at all
            out["equivalent"] = [e for rep in weakening for e in rep.metrics.get("equivalent_mutants") or []]
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
