"""Audit records: one JSON line per task in `audit.jsonl`, keyed by its content hash, so a killed audit of
thousands of tasks resumes with only what was left; counts per failure class, the hackable fraction and the tasks
with a surviving mutant. A record written before the audit ran the mutation verifier has no `mutation` entry; it
loads, and shows none. The classes come from each verifier's typed findings; a summary from before findings
existed has none, and its reasons are read instead (`VerifierReport.facts`)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from envevo.task import Task
from envevo.verify._mutation import survivors
from envevo.verify._redteam import broken_by
from envevo.verify._verdict import Verdict, VerifierReport

AUDIT_RESULTS = "audit.jsonl"


def mutant_kind(mutant_id: str) -> str:
    """prefix, wrong or skip, from a mutant's id (prefix-3of7, step2-wrong, step2-skip)."""
    return "prefix" if mutant_id.startswith("prefix-") else mutant_id.rsplit("-", 1)[-1]


def mutation_result(summary: dict) -> dict[str, Any] | None:
    """The mutation verifier's part of an audit record, from a verdict summary: the score killed/(killed+survived)
    as text ("3/4", None when no mutant was judged), the counts, and the surviving mutants by id; None when the
    verifier did not run."""
    m = summary.get("mutation")
    if not m:
        return None
    metrics = m.get("metrics") or {}
    killed, survived = int(metrics.get("killed", 0)), survivors(_report("mutation", m))
    judged = killed + len(survived)
    return {"score": f"{killed}/{judged}" if judged else None, "killed": killed, "survived": survived,
            "equivalent": list(metrics.get("equivalent_mutants") or []),
            "inconclusive": int(metrics.get("inconclusive", 0)), "run": int(metrics.get("run", 0)),
            "mutants": metrics.get("mutants"), "source": metrics.get("source")}


def failure_classes(summary: dict) -> list[str]:
    """What broke a task: 'oracle', 'invalid_test', 'exploit:<name>' per exploit that passed it, and
    'mutant:<kind>' (prefix, wrong, skip) per kind of mutant that survived."""
    classes = []
    for name in ("oracle", "invalid_test"):
        rep = summary.get(name)
        if rep and not rep["passed"]:
            classes.append(name if not rep["inconclusive"] else f"{name}:inconclusive")
    rt = summary.get("red_team")
    if rt and not rt["passed"]:
        exploits = exploits_that_broke(summary)
        classes += [f"exploit:{e}" for e in exploits] or (["red_team:inconclusive"] if rt["inconclusive"] else [])
    mu = summary.get("mutation")
    if mu and not mu["passed"]:
        kinds = dict.fromkeys(mutant_kind(m) for m in (mutation_result(summary) or {}).get("survived", []))
        classes += [f"mutant:{k}" for k in kinds] or (["mutation:inconclusive"] if mu["inconclusive"] else [])
    return classes


def exploits_that_broke(summary: dict) -> list[str]:
    """The exploits that broke the task, from the red team's findings in a verdict summary ([] when it passed or did
    not run)."""
    rt = summary.get("red_team")
    return broken_by(_report("red_team", rt)) if rt and not rt["passed"] else []


def _report(name: str, part: dict) -> VerifierReport:
    """One verifier's report back from its part of a verdict summary (`Verdict.summary`)."""
    return VerifierReport(name=name, passed=part["passed"], inconclusive=part["inconclusive"], reasons=part["reasons"],
                          findings=part.get("findings") or [])


def audit_record(task: Task, verdict: Verdict) -> dict[str, Any]:
    """The audit.jsonl line of one task's verdict."""
    s = verdict.summary()
    classes = failure_classes(s)
    return {"hash": task.content_hash(), "task": task.name, "source": str(task.source) if task.source else None,
            "status": verdict.status, "ok": verdict.ok, "broken_by": classes,
            "hackable": bool(exploits_that_broke(s)), "mutation": mutation_result(s),
            "audited_at": datetime.now(UTC).isoformat(timespec="seconds"), "verdict": s}


def record_reasons(rec: dict) -> list[str]:
    """Every verifier's reasons in a record, each prefixed by its verifier."""
    v = rec.get("verdict") or {}
    return [f"{name}: {r}" for name in ("oracle", "invalid_test", "red_team", "mutation")
            if name in v for r in v[name]["reasons"]]


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
    """Counts per status and per failure class, the hackable fraction (tasks an exploit broke), and the mutation
    verifier's totals: tasks it scored, tasks with a surviving mutant, and killed/(killed+survived) over all."""
    statuses = Counter(r["status"] for r in records)
    classes = Counter(c for r in records for c in r["broken_by"])
    hackable = sum(1 for r in records if r["hackable"])
    scored = [r["mutation"] for r in records if r.get("mutation") and r["mutation"]["score"]]
    killed = sum(m["killed"] for m in scored)
    judged = killed + sum(len(m["survived"]) for m in scored)
    return {
        "tasks": len(records),
        "status": dict(statuses),
        "failure_classes": dict(sorted(classes.items())),
        "hackable": hackable,
        "hackable_fraction": round(hackable / len(records), 4) if records else 0.0,
        "mutation_scored": len(scored),
        "mutant_survived": sum(1 for m in scored if m["survived"]),
        "mutation_score": f"{killed}/{judged}" if judged else None,
        "mutant_equivalent": sum(len(r["mutation"].get("equivalent") or []) for r in records if r.get("mutation")),
    }


VERIFIER_CLASSES = ("oracle", "invalid_test", "red_team", "mutation")


def fail_on_hits(rec: dict, wanted: list[str]) -> list[str]:
    """The failure classes of a record that `--fail-on` names: an exploit ('reward_forgery' or
    'exploit:reward_forgery'), a verifier ('oracle', 'invalid_test'; 'red_team' for any exploit, 'mutation' for any
    surviving mutant), or a class as the record states it ('mutant:wrong'). Inconclusive results never match."""
    hits = []
    for c in rec["broken_by"]:
        if c.endswith(":inconclusive"):
            continue
        kind, _, name = c.partition(":")
        aliases = {c, name} | ({"red_team"} if kind == "exploit" else {"mutation"} if kind == "mutant" else set())
        if aliases & set(wanted):
            hits.append(c)
    return hits
