"""Where one evolution's wall time goes: image builds, image mounts, sandbox setup, commands, copies, Harbor's
trial loop, the verifiers' own bookkeeping and the store, measured in-process on a procedural seed.

    python benchmarks/evolve_profile.py --env bwrap --generations 3
    python benchmarks/evolve_profile.py --env bwrap --generations 3 --json

Each category is the union of the intervals its calls spanned (trials overlap: the union is the wall time during
which at least one such call ran) and the sum of the calls' own durations. "trial" is Harbor's whole trial loop;
what the trial spends outside the categories inside it is Harbor's own overhead plus the agent's and tests' work.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import runpy
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SPANS: dict[str, list[tuple[float, float]]] = defaultdict(list)
TRIALS: list[dict] = []
STALLS: Counter[str] = Counter()  # 5 ms samples of the loop thread's stack while the loop is stalled


def _timed(category: str, fn):
    if asyncio.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def wrapped_async(*a, **k):
            t0 = time.monotonic()
            try:
                return await fn(*a, **k)
            finally:
                SPANS[category].append((t0, time.monotonic()))
        return wrapped_async

    @functools.wraps(fn)
    def wrapped(*a, **k):
        t0 = time.monotonic()
        try:
            return fn(*a, **k)
        finally:
            SPANS[category].append((t0, time.monotonic()))
    return wrapped


def _patch(owner, name: str, category: str) -> None:
    setattr(owner, name, _timed(category, getattr(owner, name)))


def instrument() -> None:
    from envevo.evolve import _loop
    from envevo.runtime import _bwrap_env, _bwrap_sandbox, _local_copy, _local_env, _trial
    from envevo.store import LineageStore

    _patch(_local_env, "build_cached_image", "image_build")
    for name in ("_image_root", "_image_config", "_image_user"):
        if hasattr(_bwrap_env, name):
            _patch(_bwrap_env, name, "image_mount")
    _patch(_bwrap_sandbox.BwrapSandbox, "open", "sandbox_open")
    _patch(_bwrap_sandbox.BwrapSandbox, "close", "sandbox_close")
    _patch(_bwrap_sandbox.BwrapSandbox, "start_init", "sandbox_init")
    _patch(_bwrap_env.BwrapEnvironment, "_exec_now", "exec")
    _patch(_bwrap_env.BwrapEnvironment, "_cp_in", "copy_in")
    _patch(_local_copy.CopyingEnvironment, "_copy_out", "copy_out")
    _patch(_local_env.LocalContainerEnvironment, "start", "env_start_podman")
    _patch(_bwrap_env.BwrapEnvironment, "start", "env_start")
    _patch(_loop, "verify_candidate", "verify_candidate")
    for name in ("add_candidate", "add_verification", "add_verifier_report", "set_candidate_result", "put_task",
                 "start_generation", "add_plan"):
        if hasattr(LineageStore, name):
            _patch(LineageStore, name, "store")

    run_trial = _trial.run_trial

    async def counted(spec):
        t0 = time.monotonic()
        out = await run_trial(spec)
        SPANS["trial"].append((t0, time.monotonic()))
        TRIALS.append({"kind": str(spec.agent).rsplit(".", 1)[-1][:40],
                       **out.timings.model_dump()})
        return out
    _trial.run_trial = counted

    run = asyncio.run

    def run_watched(main, **kw):  # the event loop's stalls: time the loop ran no other callback (blocking code)
        async def watched():
            beat = [time.monotonic()]
            loop_thread = threading.get_ident()

            def sampler() -> None:  # where the loop's thread is while the loop is stalled
                while not done:
                    time.sleep(0.005)
                    if time.monotonic() - beat[0] > 0.02:
                        frame = sys._current_frames().get(loop_thread)
                        where: list[str] = []
                        while frame is not None and len(where) < 4:
                            name = frame.f_code.co_filename
                            if not where or "/envevo/" in name or "/harbor/" in name:  # innermost, then the callers
                                where.append(f"{'/'.join(name.split('/')[-2:])}:{frame.f_code.co_name}")
                            frame = frame.f_back
                        STALLS[" < ".join(where) or "?"] += 1
            done = False
            threading.Thread(target=sampler, daemon=True).start()

            async def lag():
                while True:
                    t0 = beat[0] = time.monotonic()
                    await asyncio.sleep(0.01)
                    if (late := time.monotonic() - t0 - 0.01) > 0.02:
                        SPANS["loop_blocked"].append((t0 + 0.01, t0 + 0.01 + late))
            watcher = asyncio.create_task(lag())
            try:
                return await main
            finally:
                done = True  # noqa: F841 (read by the sampler)
                watcher.cancel()
        return run(watched(), **kw)
    asyncio.run = run_watched


def union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def report(wall: float) -> dict:
    cats = {c: {"union_s": round(union(s), 2), "sum_s": round(sum(b - a for a, b in s), 2), "calls": len(s)}
            for c, s in sorted(SPANS.items())}
    kinds: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for t in TRIALS:
        k = kinds[t["kind"]]
        k["n"] += 1
        for phase in ("environment_setup", "agent", "verifier", "teardown", "total"):
            k[phase] += t.get(phase) or 0.0
    per_kind = {a: {p: round(v / d["n"], 2) if p != "n" else int(v) for p, v in d.items()} for a, d in kinds.items()}
    return {"wall_s": round(wall, 1), "load": os.getloadavg(), "categories": cats, "trials_by_agent": per_kind,
            "loop_stalls_5ms_samples": dict(STALLS.most_common(25))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="bwrap")
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--length", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--trial-concurrency", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "envevo.cli", "seed", "procedural", f"{tmp}/seed", "--length",
                        str(args.length), "--seed", str(args.seed)], check=True, capture_output=True)
        instrument()
        sys.argv = ["envevo", "evolve", f"{tmp}/seed", "--run", f"{tmp}/run", "--generations", str(args.generations),
                    "--env", args.env, "--trial-concurrency", str(args.trial_concurrency)]
        t0 = time.monotonic()
        try:
            runpy.run_module("envevo.cli", run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                raise
        out = report(time.monotonic() - t0)
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
