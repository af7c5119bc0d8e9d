"""What `harden_task` reports: the proof before and after, the artifacts chosen, every change, and what could not
move (with the evidence and the smallest rewrite that would)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from envevo.harden._artifacts import Artifact
from envevo.harden._scan import Download, LiveProbe
from envevo.verify import INVALID_TEST, MUTATION, ORACLE, RED_TEAM, Verdict, broken_by

HardenStatus = Literal["hardened", "unchanged", "not hardened", "inconclusive"]


class ProofSide(BaseModel):
    """One side of the proof (the task as given, or its hardened copy), from a verify run with the red team on."""

    status: str  # the verdict's: ok, fail, inconclusive
    verifies: bool | None  # oracle passes (every repeat) and nop fails; None: not known here
    red_team: str  # "clean", "broken by a, b", "inconclusive", "not run"
    mutation: str  # "killed/total" or "-"
    reasons: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, v: Verdict) -> ProofSide:
        oracle, nop = v.reports.get(ORACLE), v.reports.get(INVALID_TEST)
        verifies: bool | None = None
        if oracle is not None and nop is not None and not (oracle.inconclusive or nop.inconclusive):
            verifies = oracle.passed and nop.passed
        rt = v.reports.get(RED_TEAM)
        if rt is None:
            red = "not run"
        elif rt.passed:
            red = "clean"
        elif (broke := broken_by(rt)):
            red = "broken by " + ", ".join(broke)
        else:
            red = "inconclusive" if rt.inconclusive else "failed"
        mut = v.reports.get(MUTATION)
        m = mut.metrics if mut is not None else {}
        total = m.get("killed", 0) + m.get("survived", 0)
        return cls(status=v.status, verifies=verifies, red_team=red,
                   mutation=f"{m.get('killed', 0)}/{total}" if total else ("no mutants" if mut else "-"),
                   reasons=v.reasons)


class HardenResult(BaseModel):
    task: str
    source: str
    out: str | None = None  # the hardened (or unchanged) copy, when one was written
    status: HardenStatus
    reason: str = ""
    before: ProofSide | None = None
    after: ProofSide | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list, description="changed paths left out, each with why")
    changes: list[str] = Field(default_factory=list)
    downloads: list[Download] = Field(default_factory=list)
    cannot_move: list[str] = Field(default_factory=list)
    live_state: list[LiveProbe] = Field(default_factory=list)
    suggestion: str | None = None
    diff: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status == "not hardened"
