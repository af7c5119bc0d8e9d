"""Helpers for the lineage-store tests (tiny in-memory tasks, hand-built runs), a child-process writer for the
crash and multi-process tests (`python -m tests.store.test_store_support RUN NAME...`), and checks of the helpers."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from envevo.store import LineageStore
from envevo.task import Task, load_task, save
from envevo.trace import Difficulty, Step, Trace


def tiny_task(
    name: str,
    instruction: str = "Print hello to /app/out.txt.",
    *,
    env: str = "",
    test: str = "",
    solve: str = "",
    blob: bytes = b"",
) -> Task:
    """A minimal valid Harbor task; each keyword changes exactly one component."""
    t = Task(config={"schema_version": "1.4", "task": {"name": f"envevo-tests/{name}"}})
    t.write("instruction.md", instruction + "\n")
    t.write("environment/Dockerfile", f"FROM debian:bookworm-slim\nWORKDIR /app\n{env}")
    t.write(
        "tests/test.sh",
        f"#!/bin/sh\n{test}grep -q hello /app/out.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
    )
    t.write("solution/solve.sh", f"#!/bin/sh\n{solve}echo hello > /app/out.txt\n")
    if blob:
        t.write("environment/data/blob.bin", blob)
    return t


def trace_of(n: int, goal: str = "produce /app/out.txt") -> Trace:
    return Trace(goal=goal, steps=tuple(Step(scenario=f"s{i}", skill=f"k{i}") for i in range(n)), final="out")


def difficulty_of(n: int) -> Difficulty:
    return Difficulty(L=n, scenario_novelty=1.5 * n, skill_rarity=0.5 * n, D_T=2.0 * n, estimator="test")


# ---- child-process writer ---------------------------------------------------------------------------
async def _evolve(store: LineageStore, name: str, max_gen: int | None) -> None:
    """Like the evolve loop: every write runs in a worker thread (so several lineages commit from several threads)."""
    write = asyncio.to_thread
    lid = await write(store.create_lineage, name, tiny_task(name, "generation 0"), trace=trace_of(1),
                      difficulty=difficulty_of(1))
    g = store.next_generation(lid)
    while max_gen is None or g <= max_gen:
        # A rejected candidate first, then the accepted one: both leave history rows.
        bad = tiny_task(name, f"generation {g} (bad)")
        plan = await write(store.add_plan, lid, g, "length", 1, {"direction": "length", "g": g},
                           {"accepted": True, "feedback": ""})
        cid = await write(store.add_candidate, lid, g, "length", 1, bad, plan_id=plan)
        await write(store.add_verification, cid, "oracle", False, ["scored 0.0"], [{"reward": 0.0}], wall_seconds=0.1)
        await write(store.set_candidate_result, cid, False, ["oracle: scored 0.0"])
        good = tiny_task(name, f"generation {g}", env=f"RUN echo {g}\n", blob=bytes([g % 256]) * (4096 * (1 + g % 7)))
        cid = await write(store.add_candidate, lid, g, "length", 2, good, plan_id=plan)
        await write(store.add_verification, cid, "oracle", True, [], [{"reward": 1.0}], wall_seconds=0.1)
        await write(store.set_candidate_result, cid, True)
        await write(
            store.commit_generation,
            lid,
            g,
            good,
            direction="length",
            effort="high",
            trace=trace_of(g + 1),
            difficulty=difficulty_of(g + 1),
            verified=True,
            candidate_id=cid,
        )
        print(f"{lid} {g}", flush=True)  # acknowledged: from here on it must survive any crash
        g += 1


async def _main(run: str, names: list[str], max_gen: int | None) -> None:
    with LineageStore.open(run) as store:
        await asyncio.gather(*(_evolve(store, n, max_gen) for n in names))


if __name__ == "__main__":
    args = sys.argv[1:]
    limit = None
    if args and args[0].startswith("--max-gen="):
        limit = int(args.pop(0).split("=", 1)[1])
    asyncio.run(_main(args[0], args[1:], limit))


# ---- the helpers themselves -------------------------------------------------------------------------
def test_tiny_task_is_a_valid_harbor_task(tmp_path: Path) -> None:
    t = tiny_task("x")
    t.check()
    loaded = load_task(save(t, tmp_path / "x"))
    assert loaded.content_hash() == t.content_hash()
    assert loaded.name == "envevo-tests/x"


def test_tiny_task_keywords_touch_one_component_each() -> None:
    from envevo.task import diff_tasks

    base = tiny_task("x")
    assert diff_tasks(base, tiny_task("x", "other")).mutated == {"instruction"}
    assert diff_tasks(base, tiny_task("x", env="RUN true\n")).mutated == {"environment"}
    assert diff_tasks(base, tiny_task("x", test="true\n")).mutated == {"verification"}
    assert diff_tasks(base, tiny_task("x", solve="true\n")).mutated == {"solution"}
