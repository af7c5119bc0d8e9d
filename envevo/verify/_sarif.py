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
from typing import Any

from envevo import __version__
from envevo.verify._audit import _report, mutant_kind
from envevo.verify._verdict import FindingKind

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_VERIFIERS = ("oracle", "invalid_test", "red_team", "mutation")
_LEVEL = {FindingKind.BROKE: "error", FindingKind.FAILED: "error", FindingKind.INCONCLUSIVE: "warning"}
_TESTS = ("tests/test.sh", "run-tests.sh", "tests/test_outputs.py", "tests")
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


def _rule(verifier: str, exploit: str | None) -> str:
    if exploit is None:
        return verifier
    return f"{verifier}/{mutant_kind(exploit) if verifier == 'mutation' else exploit}"


def _file_for(verifier: str, exploit: str | None) -> tuple[str, ...]:
    if verifier == "oracle":
        return ("solution/solve.sh", "solution.sh", "solution")
    if exploit in ("peeking", "shared_compose"):
        return _IMAGE
    return _TESTS


def sarif_results(rec: dict) -> list[dict[str, Any]]:
    """The SARIF results of one audit record (one per finding that is not skipped, and one per false fail)."""
    verdict = rec.get("verdict") or {}
    task_dir = Path(rec["source"]) if rec.get("source") else None
    out = []

    def result(rule: str, level: str, text: str, files: tuple[str, ...]) -> None:
        uri = _uri(task_dir, _first_existing(task_dir, files), rec["task"])
        out.append({"ruleId": rule, "level": level, "message": {"text": f"{rec['task']}: {text}"},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}],
                    "properties": {"task": rec["task"], "hash": rec.get("hash"), "status": rec.get("status")}})

    for name in _VERIFIERS:
        part = verdict.get(name)
        if not part:
            continue
        for f in _report(name, part).facts():
            if f.kind is FindingKind.SKIPPED:
                continue
            result(_rule(name, f.exploit), _LEVEL.get(f.kind, "warning"),
                   f"{f.kind.value}: {f.evidence or '(no evidence line)'}", _file_for(name, f.exploit))
        false_fail = ((part.get("metrics") or {}).get("false_fail") or {}) if name == "red_team" else {}
        for probe in false_fail.get("rejected_by") or []:
            result(f"{name}/{probe}", "warning", f"false fail: the tests reject the reference answer written "
                   f"differently ({probe}); a warning, not a hack", _TESTS)
    if rec.get("status") not in ("ok", None) and not out:  # a weak or failed task whose verifiers gave no finding
        result(str(rec["status"]), "error" if rec["status"] == "fail" else "warning", f"status {rec['status']}", _TESTS)
    return out


def audit_sarif(records: list[dict]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of an audit: one run, envevo as its tool, a rule per ruleId found."""
    results = [r for rec in records for r in sarif_results(rec)]
    rules = [{"id": rid, "name": rid.replace("/", "_"),
              "shortDescription": {"text": f"envevo {rid.replace('/', ': ')}"}}
             for rid in dict.fromkeys(r["ruleId"] for r in results)]
    return {"version": "2.1.0", "$schema": SARIF_SCHEMA,
            "runs": [{"tool": {"driver": {"name": "envevo", "version": __version__, "rules": rules}},
                      "results": results}]}
