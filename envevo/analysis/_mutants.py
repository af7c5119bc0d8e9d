"""Per committed version, what its mutation verifier found: of the near-miss solutions run, how many scored 0.

The figures are the accepted candidate's `mutation` verification (`metrics`: run, killed, survived, mutants). A
version verified without the mutation verifier (it was off, or the version is older) has none. `lineage show` and
the HTML report read them here, so both say the same."""

from __future__ import annotations

from typing import Any

from envevo.store import LineageStore
from envevo.verify import spec_of


def mutant_scores(store: LineageStore, lineage_id: str) -> dict[int, dict[str, Any]]:
    """generation -> the accepted candidate's mutation verifier metrics (only generations that have them)."""
    scores: dict[int, dict[str, Any]] = {}
    for c in store.candidates(lineage_id):
        if not c.accepted:
            continue
        for ver in store.verifications(c.id):
            # The verifier whose surviving near misses weaken a task (its spec says so): the mutation verifier.
            if (spec := spec_of(ver.verifier)) is not None and spec.weakens and ver.metrics:
                scores[c.generation] = ver.metrics
    return scores


def killed_text(metrics: dict[str, Any] | None) -> str:
    """'k/n' (n near-miss solutions judged: run, or killed in the parent on the same inputs and reused; k of them
    scored 0), or '' when none was judged. `killed` counts the reused ones, so n must too."""
    judged = (metrics or {}).get("run", 0) + (metrics or {}).get("reused", 0)
    if not judged:
        return ""
    return f"{(metrics or {}).get('killed', 0)}/{judged}"
