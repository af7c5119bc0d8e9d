"""SARIF 2.1.0 from audit records, so a CI system (GitHub code scanning, GitLab, any SARIF viewer) shows each
task's findings beside its files.

One result per finding: ruleId `<verifier>` for a verifier's own check (oracle, invalid_test) and
`<verifier>/<class>` for an exploit or a kind of mutant (red_team/reward_forgery, mutation/wrong); level `error`
for a finding that broke or failed the task, `warning` for an inconclusive or weak one and for a false fail (the
tests reject the reference answer written differently: a warning about the task, not a hack). The location is
the task's file most relevant to it: the tests (tests/test.sh, a TB1 run-tests.sh) for an exploit, a mutant or the
empty solution passing, solution/solve.sh for the oracle failing, the Dockerfile for a static finding about the
image (peeking).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from envevo import __version__
from envevo.verify._audit import part_report
from envevo.verify._plugins import TESTS_FILES, VerifierSpec, registered
from envevo.verify._verdict import FindingKind

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {FindingKind.BROKE: "error", FindingKind.FAILED: "error", FindingKind.INCONCLUSIVE: "warning"}
_TESTS = TESTS_FILES
_IMAGE = ("environment/Dockerfile", "Dockerfile", "environment/docker-compose.yaml", "environment")


def _first_existing(task_dir: Path | None, names: tuple[str, ...]) -> str:
    """The first of `names` that exists in the task dir (names only: nothing is opened), else the first name."""
    if task_dir is not None:
        for n in names:
            if (task_dir / n).exists():
                return n
    return names[0]


def _uri(task_dir: Path | None, rel: str, task: str) -> str:
    if task_dir is None:
        return f"{task}/{rel}"
    path = (task_dir / rel).absolute()
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_uri()


def _rule(spec: VerifierSpec, subject: str | None) -> str:
    return spec.name if subject is None else f"{spec.name}/{spec.subject_class(subject)}"


def _file_for(spec: VerifierSpec, subject: str | None) -> tuple[str, ...]:
    if subject is None:
        return spec.blames
    if subject in ("peeking", "shared_compose"):
        return _IMAGE
    return _TESTS


class SarifResult(TypedDict):
    """One SARIF result: a rule, its level, a message and where (the task file) it points."""

    ruleId: str
    level: str
    message: dict[str, str]
    locations: list[dict[str, object]]
    properties: dict[str, object]


def sarif_results(rec: dict) -> list[SarifResult]:
    """The SARIF results of one audit record (one per finding that is not skipped, and one per false fail)."""
    verdict = rec.get("verdict") or {}
    task_dir = Path(rec["source"]) if rec.get("source") else None
    out: list[SarifResult] = []

    def result(rule: str, level: str, text: str, files: tuple[str, ...]) -> None:
        uri = _uri(task_dir, _first_existing(task_dir, files), rec["task"])
        out.append({"ruleId": rule, "level": level, "message": {"text": f"{rec['task']}: {text}"},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}],
                    "properties": {"task": rec["task"], "hash": rec.get("hash"), "status": rec.get("status")}})

    for spec in registered():
        part = verdict.get(spec.name)
        if not part:
            continue
        for f in part_report(spec.name, part).findings:
            if f.kind is FindingKind.SKIPPED:
                continue
            result(_rule(spec, f.exploit), _LEVEL.get(f.kind, "warning"),
                   f"{f.kind.value}: {f.evidence or '(no evidence line)'}", _file_for(spec, f.exploit))
        false_fail = (part.get("metrics") or {}).get("false_fail") or {}  # the red team's probes
        for probe in false_fail.get("rejected_by") or []:
            result(f"{spec.name}/{probe}", "warning", f"false fail: the tests reject the reference answer written "
                   f"differently ({probe}); a warning, not a hack", _TESTS)
    if rec.get("status") not in ("ok", None) and not out:  # a weak or failed task whose verifiers gave no finding
        result(str(rec["status"]), "error" if rec["status"] == "fail" else "warning", f"status {rec['status']}", _TESTS)
    return out


def audit_sarif(records: list[dict]) -> dict[str, object]:
    """A SARIF 2.1.0 log of an audit: one run, envevo as its tool, a rule per ruleId found."""
    results = [r for rec in records for r in sarif_results(rec)]
    rules = [{"id": rid, "name": rid.replace("/", "_"),
              "shortDescription": {"text": f"envevo {rid.replace('/', ': ')}"}}
             for rid in dict.fromkeys(r["ruleId"] for r in results)]
    return {"version": "2.1.0", "$schema": SARIF_SCHEMA,
            "runs": [{"tool": {"driver": {"name": "envevo", "version": __version__, "rules": rules}},
                      "results": results}]}
