"""Verification latency of one seed against the floor of the same container work.

default: `verify_tasks` on one task with `--env podman`: oracle ×2 and nop, in parallel, through Harbor's trial
         loop on envevo's own local environment (envevo/runtime/_local_env.py).
harbor:  the same with `--env harbor:podman`: Harbor's own podman environment (Compose for every trial).
floor:   the same three runs with bare podman CLI calls doing the same safe work (no host mount into any
         container; docs/sandbox.md): `run -d` from the already-built image (no network when the task forbids it,
         its CPU and memory limits), copy the solution in and run solve.sh (oracle runs only). With a separate
         verifier (csv-etl): `stop` the agent's container, copy its logs and the declared artifacts out as
         `podman cp CTR:PATH -` tar streams that the host extracts (regular files and dirs only), `run -d` a fresh
         container, copy the artifacts and the tests in, run test.sh there. Shared: copy the tests in, run test.sh.
         Then copy /logs/verifier out the same way, read the reward from the host's copy, `rm -f` the containers.

All sides run warm (images built first, untimed) and side by side in one process, in turn, so machine noise
hits all of them. Prints the medians, the ratio of the medians to the floor and each round's own ratio (on a loaded
machine the per-round ratios are the fair comparison: both sides of a round met the same load).

With `--calls`, one more untimed round of the floor and of the default path runs with a logging `podman` wrapper
first on PATH, and the engine calls of each are counted by verb.

With `--sim-rollouts K`, it also runs K simulated-agent rollouts (sim-medium, SIMULATION) on each path, one
after the other, and prints rollouts per hour for both.

    python benchmarks/verify_latency.py [TASK_DIR] [--rounds N] [--no-harbor] [--sim-rollouts K] [--calls] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envevo.sandbox import activate  # noqa: E402
from envevo.verify import verify_tasks  # noqa: E402

ENGINE = "podman"


def sh(*args: str, check: bool = True) -> str:
    return subprocess.run(args, check=check, capture_output=True, text=True).stdout.strip()


def build_image(task: Path) -> str:
    tag = f"envevo-bench-{task.name}:latest"
    sh(ENGINE, "build", "-q", "-t", tag, str(task / "environment"))
    return tag


def task_config(task: Path) -> dict:
    import tomllib

    return tomllib.loads((task / "task.toml").read_text())


def separate_verifier(task: Path) -> list[str] | None:
    """The artifacts a task hands to a separate verifier container, or None when its tests share the agent's."""
    config = task_config(task)
    if (config.get("verifier") or {}).get("environment_mode") != "separate":
        return None
    return [a if isinstance(a, str) else a["source"] for a in config.get("artifacts", [])]


def run_args(task: Path) -> list[str]:
    """What envevo's `run -d` gets from the task too: no network when it forbids internet, its CPU and memory."""
    env = task_config(task).get("environment") or {}
    args = []
    if env.get("network_mode") == "no-network" or env.get("allow_internet") is False:
        args.append("--network=none")
    if env.get("cpus"):
        args += ["--cpus", str(env["cpus"])]
    if env.get("memory_mb"):
        args += ["--memory", f"{int(env['memory_mb'])}m"]
    return args


def extract_regular(stream: IO[bytes], target: Path) -> None:
    """Extract a `podman cp CTR:PATH -` archive under `target`: regular files and directories only (no link, FIFO
    or device is created), names confined by tarfile's data filter. The floor's side of envevo's safe copy-out."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            if member.isreg() or member.isdir():
                archive.extract(member, target, filter="data")


async def copy_out(container: str, path: str, target: Path) -> bool:
    """`podman cp CTR:PATH -`, the tar stream extracted on the host in a thread (as envevo does); False if absent."""

    def blocking() -> bool:
        proc = subprocess.Popen([ENGINE, "cp", f"{container}:{path}", "-"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        try:
            extract_regular(proc.stdout, target)
        except (tarfile.TarError, EOFError):
            pass  # no such path: an empty stream
        finally:
            proc.stdout.close()
            proc.wait()
        return proc.returncode == 0

    return await asyncio.to_thread(blocking)


async def floor_run(image: str, task: Path, oracle: bool) -> float:
    """One trial's safe container work with nothing on top, CLI calls only.

    Agent container (`run -d`, no host mount): copy the solution in and run solve.sh (oracle runs only), stop the
    container (its processes end with the agent phase), copy the agent's logs out as a tar stream the host extracts
    (regular files and dirs only). Separate verifier: copy the declared artifacts out the same way, run a fresh
    container, copy them and the tests in, test there. Shared: copy the tests in and test in the agent's container
    (not stopped then: the tests may need what it started). Either way /logs/verifier leaves as a tar stream and the
    reward is read from the host's copy; then `rm -f` every container."""

    async def run(*args: str) -> str:
        proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        out, _ = await proc.communicate()
        return out.decode().strip()

    async def start(logs: str) -> str:
        # The log dir is made by the container's first command: no extra exec.
        return await run(ENGINE, "run", "-d", *run_args(task), image, "sh", "-c", f"mkdir -p {logs} && exec sleep infinity")

    artifacts = separate_verifier(task)
    cids = [await start("/logs/agent /logs/verifier")]
    with tempfile.TemporaryDirectory() as held_dir:
        held = Path(held_dir)
        try:
            if oracle:
                await run(ENGINE, "cp", str(task / "solution"), f"{cids[0]}:/solution")
                await run(ENGINE, "exec", cids[0], "bash", "/solution/solve.sh")
            if artifacts is not None:
                await run(ENGINE, "stop", "--time", "0", cids[0])
                await copy_out(cids[0], "/logs/agent", held / "agent")
                copied = [await copy_out(cids[0], path, held / str(i)) for i, path in enumerate(artifacts)]
                cids.append(await start("/logs/verifier"))
                for i, path in enumerate(artifacts):
                    src = held / str(i) / Path(path).name  # the archive names the source by its own name
                    if copied[i] and src.exists():
                        # A directory's content into the path (which the image may already have), as envevo uploads.
                        await run(ENGINE, "cp", f"{src}/." if src.is_dir() else str(src), f"{cids[1]}:{path}")
            else:
                await copy_out(cids[0], "/logs/agent", held / "agent")
            await run(ENGINE, "cp", str(task / "tests"), f"{cids[-1]}:/tests")
            await run(ENGINE, "exec", cids[-1], "bash", "/tests/test.sh")
            await copy_out(cids[-1], "/logs/verifier", held / "verifier")
            reward_file = held / "verifier" / "verifier" / "reward.txt"
            reward = reward_file.read_text().strip() if reward_file.is_file() else ""
        finally:
            await run(ENGINE, "rm", "-f", "--time", "0", *cids)
    expected = "1" if oracle else "0"
    if not reward.startswith(expected):
        raise SystemExit(f"floor run on {task.name} gave reward {reward!r}, expected {expected}")
    return float(reward)


async def floor(image: str, task: Path) -> float:
    t0 = time.monotonic()
    await asyncio.gather(floor_run(image, task, True), floor_run(image, task, True), floor_run(image, task, False))
    return time.monotonic() - t0


async def envevo_verify(task: Path, jobs: Path, env: str = ENGINE) -> float:
    t0 = time.monotonic()
    (verdict,) = await verify_tasks([(task.name, task)], jobs, env=env, concurrency=3)
    if not verdict.ok:
        raise SystemExit(f"{task.name} did not verify: {verdict.reasons}")
    return time.monotonic() - t0


async def red_team_cost(task: Path, jobs: Path) -> dict[str, float]:
    """--red-team: seconds of the oracle verifier alone, the red team alone, and a whole verification with it on.

    The red team's verdict is not required to pass: the cost is the same whether the exploits break the task or not."""
    from envevo.verify import OracleVerifier, RedTeamVerifier, default_verifiers

    out = {}
    for key, verifiers in (("oracle", [OracleVerifier(repeats=2)]), ("red_team", [RedTeamVerifier()]),
                           ("verify_red_team", default_verifiers(2, red_team="on"))):
        t0 = time.monotonic()
        await verify_tasks([(task.name, task)], jobs / key, env=ENGINE, verifiers=verifiers, concurrency=3)
        out[key] = time.monotonic() - t0
    return out


WRAPPER = """#!/bin/sh
printf '%s\\n' "$*" >> {log}
exec {engine} "$@"
"""


async def count_calls(image: str, task: Path, tmp: Path) -> dict[str, dict[str, int]]:
    """--calls: the engine calls of one floor round and one default verification, by verb (untimed)."""
    bin_dir, log = tmp / "calls-bin", tmp / "calls.log"
    bin_dir.mkdir()
    (bin_dir / ENGINE).write_text(WRAPPER.format(log=shlex.quote(str(log)), engine=shlex.quote(str(shutil.which(ENGINE)))))
    (bin_dir / ENGINE).chmod(0o755)
    path = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{path}"
    counts = {}
    try:
        for side, run in (("floor", lambda: floor(image, task)), ("default", lambda: envevo_verify(task, tmp / "calls"))):
            log.write_text("")
            await run()
            verbs = collections.Counter(line.split()[0] for line in log.read_text().splitlines() if line.strip())
            counts[side] = {"total": sum(verbs.values()), **dict(verbs.most_common())}
    finally:
        os.environ["PATH"] = path
    return counts


def public_copy(task: Path, dest_root: Path) -> Path:
    """A copy of `task` with internet on: Harbor's podman environment rejects no-network tasks."""
    public = dest_root / task.name
    shutil.copytree(task, public)
    toml = public / "task.toml"
    toml.write_text("\n".join(line for line in toml.read_text().splitlines()
                              if not line.replace(" ", "").startswith(("network_mode=", "allow_internet="))) + "\n")
    return public


async def sim_rollouts(task: Path, k: int, env: str, trials: Path) -> float:
    """Rollouts per hour of sim-medium on `task` through `env`, k rollouts at the verifier's concurrency."""
    from envevo.rollout import dir_targets, rollout

    t0 = time.monotonic()
    (summary,) = await rollout(dir_targets([task]), "sim-medium", None, k, env=env, concurrency=3, trials_dir=trials)
    if summary.n != k:
        raise SystemExit(f"sim rollouts on {env}: only {summary.n} of {k} counted ({summary.errors})")
    return 3600 * k / (time.monotonic() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", nargs="?", type=Path, default=ROOT / "examples" / "seeds" / "csv-etl")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-harbor", action="store_true", help="skip Harbor's own podman path (slow)")
    ap.add_argument("--sim-rollouts", type=int, default=0, metavar="K", help="also time K sim-medium rollouts per path")
    ap.add_argument("--red-team", action="store_true",
                    help="also time the red team: alone, against the oracle verifier, and in a whole verification")
    ap.add_argument("--calls", action="store_true", help="also count the engine calls of each side (one untimed round)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    activate()
    task = args.task.resolve()
    image = build_image(task)
    ours: list[float] = []
    base: list[float] = []
    harbor: list[float] = []
    per_hour: dict[str, float] = {}
    red: list[dict[str, float]] = []
    calls: dict[str, dict[str, int]] = {}

    async def rounds(tmp: Path) -> None:
        # One event loop for the whole run: Harbor keeps loop-bound locks at module level.
        await envevo_verify(task, tmp / "warmup")  # warms envevo's image cache; untimed
        if not args.no_harbor:
            await envevo_verify(public, tmp / "warmup-h", env=f"harbor:{ENGINE}")
        for i in range(args.rounds):
            base.append(await floor(image, task))
            ours.append(await envevo_verify(task, tmp / f"r{i}"))
            if not args.no_harbor:
                harbor.append(await envevo_verify(public, tmp / f"h{i}", env=f"harbor:{ENGINE}"))
            if args.red_team:
                red.append(await red_team_cost(task, tmp / f"rt{i}"))
        if args.calls:
            calls.update(await count_calls(image, task, tmp))
        if args.sim_rollouts:
            # Simulated agents act on procedural tasks only: the demo's seed (L=3, seed 7).
            seed = tmp / "sim" / "seed"
            sh(sys.executable, "-m", "envevo.cli", "seed", "procedural", str(seed), "--length", "3", "--seed", "7")
            seed_public = public_copy(seed, tmp / "sim" / "public")
            await sim_rollouts(seed, 1, ENGINE, tmp / "sim-warm")  # builds the image; untimed
            per_hour["default"] = await sim_rollouts(seed, args.sim_rollouts, ENGINE, tmp / "sim-d")
            if not args.no_harbor:
                per_hour["harbor_podman"] = await sim_rollouts(seed_public, args.sim_rollouts, f"harbor:{ENGINE}", tmp / "sim-h")

    with tempfile.TemporaryDirectory() as tmp:
        # Harbor's podman environment rejects no-network tasks, so its side runs a copy with internet on.
        public = public_copy(task, Path(tmp) / "public")
        asyncio.run(rounds(Path(tmp)))
    result = {
        "task": task.name,
        "rounds": args.rounds,
        "envevo_verify_s": round(statistics.median(ours), 2),
        "floor_s": round(statistics.median(base), 2),
        "ratio": round(statistics.median(ours) / statistics.median(base), 2),
        "ratio_all": [round(o / b, 2) for o, b in zip(ours, base, strict=True)],
        "envevo_all_s": [round(x, 2) for x in ours],
        "floor_all_s": [round(x, 2) for x in base],
    }
    if calls:
        result["engine_calls"] = calls
    if per_hour:
        result["sim_rollouts_per_hour"] = {k: round(v) for k, v in per_hour.items()}
    if harbor:
        result |= {"harbor_podman_s": round(statistics.median(harbor), 2),
                   "harbor_ratio": round(statistics.median(harbor) / statistics.median(base), 2),
                   "harbor_all_s": [round(x, 2) for x in harbor],
                   "harbor_ratio_all": [round(h / b, 2) for h, b in zip(harbor, base, strict=True)]}
    if red:
        med = {k: statistics.median(r[k] for r in red) for k in red[0]}
        result["red_team"] = {"oracle_s": round(med["oracle"], 2), "red_team_s": round(med["red_team"], 2),
                              "red_team_over_oracle": round(med["red_team"] / med["oracle"], 2),
                              "verify_with_red_team_s": round(med["verify_red_team"], 2),
                              "verify_with_red_team_over_default": round(med["verify_red_team"] / statistics.median(ours), 2),
                              "all": [{k: round(v, 2) for k, v in r.items()} for r in red]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"task {task.name}: oracle x2 + nop in parallel, median of {args.rounds} rounds")
        print(f"  envevo verify (default) : {result['envevo_verify_s']:6.2f} s   {result['envevo_all_s']}   "
              f"{result['ratio']:.2f}x floor (per round {result['ratio_all']})")
        if harbor:
            print(f"  harbor:podman           : {result['harbor_podman_s']:6.2f} s   {result['harbor_all_s']}   "
                  f"{result['harbor_ratio']:.2f}x floor (per round {result['harbor_ratio_all']})")
        print(f"  podman floor            : {result['floor_s']:6.2f} s   {result['floor_all_s']}")
        if red:
            r = result["red_team"]
            print(f"  red team alone          : {r['red_team_s']:6.2f} s = {r['red_team_over_oracle']:.2f}x the oracle "
                  f"verifier ({r['oracle_s']:.2f} s); verify with --red-team on: {r['verify_with_red_team_s']:.2f} s "
                  f"= {r['verify_with_red_team_over_default']:.2f}x verify without")
        for side, verbs in calls.items():
            print(f"  engine calls, {side:<9}: {verbs['total']}   "
                  + ", ".join(f"{k} {v}" for k, v in verbs.items() if k != "total"))
        for path, rate in per_hour.items():
            print(f"  sim-medium rollouts/h (SIMULATION), {path}: {rate:.0f}")


if __name__ == "__main__":
    main()
