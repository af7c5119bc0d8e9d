"""Weakness-targeted against untargeted evolution of the same procedural seeds (SIMULATION, no sandbox).

Both arms walk the same seeds with the same random streams through the procedural engine's operators (the
directions shuffled each generation, the first that has an edit wins, as the loop does); verification is left
out, so every drawn edit counts. The target agent's weakness δ_θ per skill and scenario is computed from its
profile's exact per-step success on the untargeted arm's versions: δ = [log(s̄/s_unit)]_+, the value the
estimator of `envevo difficulty --weakness` converges to (tests/rollout/test_weakness.py checks it gets within
0.016), with s a step's chance to end right after the profile's self-check, notice and retries. The pass rates are
the profiles' exact expectations (`envevo.rollout.expected`), with every step's wrong variant assumed to pass the
self-check (the common case; the fact is only known from a version's rollouts).

    PYTHONPATH=. python benchmarks/weakness_targeting.py [--agent sim-weak] [--seeds 6] [--generations 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict

from envevo.catalog import CatalogPrior, random_chain
from envevo.evolve.engines.procedural import WeaknessTarget, mutate
from envevo.rollout import PROFILES, expected


def walk(seed: int, generations: int, effort: str, target: WeaknessTarget | None, prior: CatalogPrior):
    chain = random_chain(None, 3, seed)
    rng = random.Random(f"walk|{seed}")
    out = [chain]
    for _ in range(generations):
        order = ["length", "scenario", "skill"]
        rng.shuffle(order)
        new = next((c for d in order if (c := mutate(out[-1], d, effort, rng, prior, target)) is not None), None)
        if new is None:
            break
        out.append(new)
    return out


def pass_rate(agent: str, chain, prior: CatalogPrior) -> float:
    return expected(chain, PROFILES[agent], prior).pass_rate


def true_weakness(agent: str, chains, prior: CatalogPrior) -> WeaknessTarget:
    by_skill, by_scen, allp = defaultdict(list), defaultdict(list), []
    for c in chains:
        for step in expected(c, PROFILES[agent], prior).steps:
            by_skill[step.skill].append(step.p_right)
            by_scen[step.scenario].append(step.p_right)
            allp.append(step.p_right)
    s_bar = sum(allp) / len(allp)
    delta = lambda ps: max(0.0, math.log(s_bar / (sum(ps) / len(ps))))
    return WeaknessTarget(agent=agent, skills={k: delta(v) for k, v in by_skill.items()},
                          scenarios={k: delta(v) for k, v in by_scen.items()}, source="profile (exact)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", default="sim-weak")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--generations", type=int, default=10)
    ap.add_argument("--effort", default="high")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    prior = CatalogPrior()
    start = time.monotonic()
    plain = {s: walk(s, args.generations, args.effort, None, prior) for s in range(args.seeds)}
    target = true_weakness(args.agent, [c for cs in plain.values() for c in cs], prior)
    aimed = {s: walk(s, args.generations, args.effort, target, prior) for s in range(args.seeds)}
    rows = []
    for g in range(args.generations + 1):
        row: dict = {"generation": g}
        for arm, walks in (("untargeted", plain), ("targeted", aimed)):
            at = [cs[g] for cs in walks.values() if len(cs) > g]
            row[arm] = {"n": len(at), "delta": sum(target.total(c.pairs()) for c in at) / max(1, len(at)),
                        "D_T": sum(prior.difficulty(c.trace()).D_T for c in at) / max(1, len(at)),
                        **{a: sum(pass_rate(a, c, prior) for c in at) / max(1, len(at)) for a in PROFILES}}
        rows.append(row)
    doc = {"simulation": True, "agent": args.agent, "seeds": args.seeds, "effort": args.effort,
           "weakest": target.weakest(5), "rows": rows, "wall_s": round(time.monotonic() - start, 1)}
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    weakest = ", ".join(f"{k} {v:.2f}" for k, v in doc["weakest"])
    print(f"SIMULATION: target {args.agent}, {args.seeds} seeds, effort {args.effort}; exact expected pass rates; "
          f"weakest: {weakest}")
    agents = list(PROFILES)
    head = "gen  n " + " ".join(f"{'U:' + a[4:]:>9} {'T:' + a[4:]:>9}" for a in agents) + "   U:Σδ  T:Σδ   U:D_T  T:D_T"
    print(head)
    for r in rows:
        u, t = r["untargeted"], r["targeted"]
        cells = " ".join(f"{u[a]:9.3f} {t[a]:9.3f}" for a in agents)
        print(f"{r['generation']:3d} {u['n']:2d} {cells}  {u['delta']:5.2f} {t['delta']:5.2f}  {u['D_T']:6.2f} {t['D_T']:6.2f}")
    print(f"wall {doc['wall_s']} s")


if __name__ == "__main__":
    main()
