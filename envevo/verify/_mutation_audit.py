"""What the mutation verifier adds to an audit (its registry spec's `audit_part` and `audit_totals`): its score per
task record, and its totals over an audit. A record written before the audit ran the mutation verifier has none."""

from __future__ import annotations

from typing import TypedDict

from envevo.verify._verdict import FindingKind, VerifierReport


class MutationPart(TypedDict):
    """The mutation verifier's part of an audit record (audit.jsonl's `mutation`)."""

    score: str | None
    killed: int
    survived: list[str]
    equivalent: list[str]
    inconclusive: int
    run: int
    mutants: int | None
    source: str | None


def mutation_result(part: VerifierReport | None) -> MutationPart | None:
    """The mutation verifier's part of an audit record, from its report: the score killed/(killed+survived) as text
    ("3/4", None when no mutant was judged), the counts, and the surviving mutants by id; None when it did not run."""
    if part is None:
        return None
    metrics = part.metrics
    killed = int(metrics.get("killed", 0))
    survived = [f.exploit for f in part.findings if f.kind is FindingKind.BROKE and f.exploit is not None]
    judged = killed + len(survived)
    return {"score": f"{killed}/{judged}" if judged else None, "killed": killed, "survived": survived,
            "equivalent": list(metrics.get("equivalent_mutants") or []),
            "inconclusive": int(metrics.get("inconclusive", 0)), "run": int(metrics.get("run", 0)),
            "mutants": metrics.get("mutants"), "source": metrics.get("source")}


def mutation_totals(parts: list[MutationPart]) -> dict[str, int | str | None]:
    """Over an audit's records' parts: tasks it scored, tasks with a surviving mutant, killed/(killed+survived) over
    all, and the mutants found equivalent."""
    scored = [m for m in parts if m["score"]]
    killed = sum(m["killed"] for m in scored)
    judged = killed + sum(len(m["survived"]) for m in scored)
    return {"mutation_scored": len(scored), "mutant_survived": sum(1 for m in scored if m["survived"]),
            "mutation_score": f"{killed}/{judged}" if judged else None,
            "mutant_equivalent": sum(len(m.get("equivalent") or []) for m in parts)}
