"""Audit records: one JSON line per task in `audit.jsonl`, keyed by its content hash, so a killed audit of
thousands of tasks resumes with only what was left; counts per failure class, the hackable fraction and the tasks
with a surviving mutant. Every registered verifier (envevo/verify/_plugins.py) is handled alike, by its spec; one
may add a part to each record and totals to the summary (the mutation verifier's score). A record written before a
verifier existed has no entry for it; it loads, and shows none. The classes come from each verifier's typed
findings; a summary stored before findings carried their text is read through `stored_findings`."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from envevo.task import Task
from envevo.verify._plugins import VerifierSpec, registered, verifier_names
from envevo.verify._verdict import FindingKind, Verdict, VerifierReport

AUDIT_RESULTS = "audit.jsonl"


def part_report(name: str, part: dict) -> VerifierReport:
    """One verifier's report back from its part of a verdict summary (`Verdict.summary`), as stored (its runs left
    out: what an audit reads is the verdict, the findings and the figures)."""
    kept = ("passed", "inconclusive", "weak", "reasons", "notes", "metrics", "findings")
    return VerifierReport.model_validate({"name": name, **{k: part[k] for k in kept if part.get(k) is not None}})


def _parts(summary: dict) -> list[tuple[VerifierSpec, VerifierReport]]:
    """The registered verifiers' reports in a verdict summary, in registry order."""
    return [(spec, part_report(spec.name, summary[spec.name])) for spec in registered() if summary.get(spec.name)]


def _broke(rep: VerifierReport) -> list[str]:
    return [f.exploit for f in rep.findings if f.kind is FindingKind.BROKE and f.exploit is not None]


def failure_classes(summary: dict) -> list[str]:
    """What broke a task: a verifier's own check that failed ('oracle', 'invalid_test'), '<subject>:<class>' per
    subject a verifier found broke the tests ('exploit:<name>' per exploit that passed it, 'mutant:<kind>' (prefix,
    wrong, skip) per kind of mutant that survived), and '<verifier>:inconclusive' where it had no evidence."""
    classes = []
    for spec, rep in _parts(summary):
        if rep.passed:
            continue
        if spec.subject is None:
            classes.append(spec.name if not rep.inconclusive else f"{spec.name}:inconclusive")
            continue
        found = dict.fromkeys(spec.subject_class(s) for s in _broke(rep))
        classes += [f"{spec.subject}:{c}" for c in found] or ([f"{spec.name}:inconclusive"] if rep.inconclusive else [])
    return classes


def exploits_that_broke(summary: dict) -> list[str]:
    """The subjects (exploits) that broke the task outright, from the findings in a verdict summary of the
    verifiers whose findings do not merely weaken it ([] when they passed or did not run)."""
    return [s for spec, rep in _parts(summary) if not spec.weakens and not rep.passed for s in _broke(rep)]


def audit_record(task: Task, verdict: Verdict) -> dict[str, Any]:
    """The audit.jsonl line of one task's verdict."""
    s = verdict.summary()
    classes = failure_classes(s)
    parts = {spec.name: spec.load(spec.audit_part)(part_report(spec.name, s[spec.name]) if s.get(spec.name) else None)
             for spec in registered() if spec.audit_part is not None}
    return {"hash": task.content_hash(), "task": task.name, "source": str(task.source) if task.source else None,
            "status": verdict.status, "ok": verdict.ok, "broken_by": classes,
            "hackable": bool(exploits_that_broke(s)), **parts,
            "audited_at": datetime.now(UTC).isoformat(timespec="seconds"), "verdict": s}


def record_reasons(rec: dict) -> list[str]:
    """Every verifier's reasons in a record, each prefixed by its verifier."""
    v = rec.get("verdict") or {}
    return [f"{name}: {r}" for name in verifier_names() if name in v for r in v[name]["reasons"]]


def load_audit_results(path: Path) -> dict[str, dict]:
    """hash → record, from an audit.jsonl; a torn last line (a crash mid-write) is ignored."""
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and "hash" in rec:
            done[rec["hash"]] = rec
    return done


def end_torn_line(path: Path) -> None:
    """A torn last line (killed mid-write) stays alone on its line, so the next record appended is whole."""
    if path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with path.open("a") as f:
            f.write("\n")


def summarize_audit(records: list[dict]) -> dict:
    """Counts per status and per failure class, the hackable fraction (tasks an exploit broke), and each verifier's
    own totals (the mutation verifier's: tasks it scored, tasks with a surviving mutant, killed/(killed+survived))."""
    statuses = Counter(r["status"] for r in records)
    classes = Counter(c for r in records for c in r["broken_by"])
    hackable = sum(1 for r in records if r["hackable"])
    out: dict[str, object] = {
        "tasks": len(records),
        "status": dict(statuses),
        "failure_classes": dict(sorted(classes.items())),
        "hackable": hackable,
        "hackable_fraction": round(hackable / len(records), 4) if records else 0.0,
    }
    for spec in registered():
        if spec.audit_totals is not None:
            out |= spec.load(spec.audit_totals)([r[spec.name] for r in records if r.get(spec.name)])
    return out


VERIFIER_CLASSES = verifier_names()  # the built-in verifiers: each a failure class `--fail-on` takes


def fail_on_hits(rec: dict, wanted: list[str]) -> list[str]:
    """The failure classes of a record that `--fail-on` names: an exploit ('reward_forgery' or
    'exploit:reward_forgery'), a verifier (its own check, or any subject it found: the red team's exploits, the
    mutation verifier's surviving mutants), or a class as the record states it ('mutant:wrong'). Inconclusive
    results never match."""
    by_subject = {spec.subject: spec.name for spec in registered() if spec.subject is not None}
    hits = []
    for c in rec["broken_by"]:
        if c.endswith(":inconclusive"):
            continue
        kind, _, name = c.partition(":")
        aliases = {c, name} | ({by_subject[kind]} if kind in by_subject else set())
        if aliases & set(wanted):
            hits.append(c)
    return hits

