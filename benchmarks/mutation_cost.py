"""What the mutation verifier costs per candidate against the oracle, and what it caught, from runs' stored verdicts.

Reads every candidate a run verified (`envevo evolve --run RUN`): its oracle runs and its mutation runs, each trial's
own wall seconds as the store keeps them (`Verification.runs[].timings.total`), and the mutation verifier's figures
(mutants, run, reused from the parent, killed, survived). Trial-seconds are summed work, not the candidate's wall:
the verifiers run in one pool, so the wall of a verification is shared. Prints, per run and pooled, the mean per
candidate and the ratio mutation / oracle; and the candidates the verifier failed, with the mutant that survived.

    .venv/bin/python benchmarks/mutation_cost.py RUN [RUN ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _seconds(runs: list[dict[str, Any]]) -> float:
    return sum(((r.get("timings") or {}).get("total") or 0.0) for r in runs)


def measure(run_dir: Path) -> dict[str, Any]:
    from envevo.store import LineageStore

    rows: list[dict[str, Any]] = []
    caught: list[dict[str, Any]] = []
    with LineageStore.open(run_dir, create=False) as store:
        config = store.run_config() or {}
        for lineage in store.lineages():
            for c in store.candidates(lineage.id):
                by = {v.verifier: v for v in store.verifications(c.id)}
                if "oracle" not in by or "mutation" not in by:
                    continue  # not verified (the Modifier made nothing), or verified without the mutation verifier
                m = by["mutation"].metrics
                rows.append({"oracle_trials": len(by["oracle"].runs), "oracle_sec": _seconds(by["oracle"].runs),
                             "mutation_trials": len(by["mutation"].runs), "mutation_sec": _seconds(by["mutation"].runs),
                             "mutants": m.get("mutants", 0), "reused": m.get("reused", 0),
                             "killed": m.get("killed", 0), "survived": m.get("survived", 0)})
                if not by["mutation"].passed and not by["mutation"].inconclusive:
                    caught.append({"lineage": lineage.id, "generation": c.generation, "accepted": c.accepted,
                                   "reason": (by["mutation"].reasons or ["?"])[0].splitlines()[0]})
    return {"run": str(run_dir), "mutation": config.get("mutation"), "candidates": len(rows), "rows": rows,
            "caught": caught}


def summarize(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows) or 1
    mean = {k: sum(r[k] for r in rows) / n for k in ("oracle_trials", "oracle_sec", "mutation_trials", "mutation_sec",
                                                     "mutants", "reused", "killed", "survived")}
    mean["ratio_sec"] = mean["mutation_sec"] / mean["oracle_sec"] if mean["oracle_sec"] else float("nan")
    mean["ratio_trials"] = mean["mutation_trials"] / mean["oracle_trials"] if mean["oracle_trials"] else float("nan")
    return mean


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    results = [measure(r) for r in a.runs]
    pooled = [row for r in results for row in r["rows"]]
    out = {"runs": [{k: v for k, v in r.items() if k != "rows"} | {"mean": summarize(r["rows"])} for r in results],
           "pooled": {"candidates": len(pooled), "mean": summarize(pooled)}}
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print("per candidate (mean): oracle trials / s, mutation trials / s (mutants, reused, killed, survived), ratio")
    for r in out["runs"] + [{"run": "pooled", "mutation": "", "caught": [], **out["pooled"]}]:
        m = r["mean"]
        print(f"{r['run']} ({r['candidates']} candidates, --mutation {r['mutation']}): oracle {m['oracle_trials']:.1f} / "
              f"{m['oracle_sec']:.1f} s; mutation {m['mutation_trials']:.1f} / {m['mutation_sec']:.1f} s "
              f"({m['mutants']:.1f} mutants, {m['reused']:.1f} reused, {m['killed']:.1f} killed, "
              f"{m['survived']:.2f} survived); mutation/oracle {m['ratio_sec']:.2f}× in trial-seconds, "
              f"{m['ratio_trials']:.2f}× in trials")
        for c in r["caught"]:
            print(f"  caught: {c['lineage']} g{c['generation']} ({'accepted later' if c['accepted'] else 'rejected'}): "
                  f"{c['reason']}")


if __name__ == "__main__":
    main()
