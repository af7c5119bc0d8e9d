"""`envevo audit`: oracle, invalid-test and the red team over any Harbor dataset folder or set of tasks.

Results go to `--out DIR/audit.jsonl`, one line per task keyed by its content hash, appended as each task's
verdict is known; `--resume` skips the tasks already there, so a killed audit of thousands of tasks re-runs only
what was left. All tasks' trials share one bounded pool, and each task's record is written the moment its last trial ends,
so a crash loses only the tasks in flight.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.table import Table

from envevo.cli._common import err, out, print_json, progress, user_errors
from envevo.errors import UserError

RESULTS = "audit.jsonl"


def _failure_classes(summary: dict) -> list[str]:
    """What broke a task: 'oracle', 'invalid_test', and 'exploit:<name>' per exploit that passed it."""
    from envevo.verify import VerifierReport, broken_by

    classes = []
    for name in ("oracle", "invalid_test"):
        rep = summary.get(name)
        if rep and not rep["passed"]:
            classes.append(name if not rep["inconclusive"] else f"{name}:inconclusive")
    rt = summary.get("red_team")
    if rt and not rt["passed"]:
        report = VerifierReport(name="red_team", passed=False, inconclusive=rt["inconclusive"], reasons=rt["reasons"])
        exploits = broken_by(report)
        classes += [f"exploit:{e}" for e in exploits] or (["red_team:inconclusive"] if rt["inconclusive"] else [])
    return classes


def load_results(path: Path) -> dict[str, dict]:
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


def summarize(records: list[dict]) -> dict:
    """Counts per status and per failure class, and the hackable fraction (tasks an exploit broke)."""
    statuses = Counter(r["status"] for r in records)
    classes = Counter(c for r in records for c in r["broken_by"])
    hackable = sum(1 for r in records if r["hackable"])
    return {
        "tasks": len(records),
        "status": dict(statuses),
        "failure_classes": dict(sorted(classes.items())),
        "hackable": hackable,
        "hackable_fraction": round(hackable / len(records), 4) if records else 0.0,
    }


@user_errors
def audit(
    tasks: list[Path] = typer.Argument(..., help="Harbor dataset folders, task dirs (Harbor or Terminal-Bench 1), or folders of tasks."),
    out_dir: Path = typer.Option(Path("audit"), "--out", help="Where results (audit.jsonl) and trial logs go."),
    resume: bool = typer.Option(False, "--resume", help="Skip tasks whose content hash already has a result in --out."),
    env: str = typer.Option("podman", "--env", help="podman or docker (envevo's local sandbox), harbor:podman, a cloud environment or pkg.mod:Class."),
    repeats: int = typer.Option(1, "--repeats", min=1, help="Oracle runs per task."),
    red_team: str = typer.Option("on", "--red-team", help="on, off, or sample:N exploits per task."),
    concurrency: int = typer.Option(3, "--concurrency", min=1, help="Trials running at once."),
    image_map: list[str] = typer.Option([], "--image-map", help="Rewrite a base image, e.g. ubuntu:24.04=registry.local/ubuntu:24.04 (repeatable)."),
    config: Path | None = typer.Option(None, "--config", help="envevo.toml with an [images] table."),
    json_out: bool = typer.Option(False, "--json", help="Print {tasks: [...], summary: {...}} as JSON."),
) -> None:
    """Audit tasks for soundness and reward hacks: per task, which verifier failed and which exploit broke it."""
    from envevo.cli.verify_cmd import preflight
    from envevo.sandbox import standins_for
    from envevo.task import expand_task_dirs, load_image_map, load_task, prepare_runnable
    from envevo.verify import default_verifiers, parse_red_team, verify_tasks

    try:
        parse_red_team(red_team)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out_dir = out_dir.resolve()
    results = out_dir / RESULTS
    if results.is_file() and not resume:
        raise UserError(f"{results} holds an earlier audit: pass --resume to continue it, or choose another --out")
    preflight(env)
    mapping = load_image_map(image_map, config)
    loaded = [load_task(p) for p in expand_task_dirs(tasks)]  # every task validated before any container starts
    done = load_results(results)
    todo, seen = [], set()
    for t in loaded:
        h = t.content_hash()
        if h in done or h in seen:
            continue
        seen.add(h)
        todo.append(t)
    if done:
        err.print(f"resuming: {len(loaded) - len(todo)} of {len(loaded)} task(s) already audited in {results}")
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = out_dir / "trials"
    engine = env.removeprefix("harbor:")
    verifiers = default_verifiers(repeats, red_team=red_team)
    t0 = time.monotonic()

    def prepared(t):
        standin = standins_for(t, engine) if engine in ("podman", "docker") else None
        m = standin[0].merged(mapping) if standin else mapping
        key = f"{t.name}-{t.content_hash()[:10]}"
        return key, prepare_runnable(t, m, jobs / "_tasks"), (standin[1] if standin else [])

    async def run_all(advance, sink) -> None:
        gate = asyncio.Semaphore(concurrency)  # trials at once, over all tasks
        in_flight = asyncio.Semaphore(max(2, 2 * concurrency))  # tasks prepared at once (their copies on disk)

        async def one(t) -> None:
            async with in_flight:
                key, task_dir, subs = prepared(t)
                (v,) = await verify_tasks([(key, task_dir)], jobs, env=env, verifiers=verifiers, gate=gate)
            v.substitutions = subs
            s = v.summary()
            classes = _failure_classes(s)
            rec = {"hash": t.content_hash(), "task": t.name, "source": str(t.source) if t.source else None,
                   "status": v.status, "ok": v.ok, "broken_by": classes,
                   "hackable": any(c.startswith("exploit:") for c in classes),
                   "audited_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "verdict": s}
            sink.write(json.dumps(rec, default=str) + "\n")
            sink.flush()
            done[t.content_hash()] = rec
            advance(f"{t.name} → {v.status}{' (' + ', '.join(classes) + ')' if classes else ''}")

        await asyncio.gather(*(one(t) for t in todo))

    if results.is_file() and results.stat().st_size and not results.read_bytes().endswith(b"\n"):
        with results.open("a") as f:  # a torn last line (killed mid-write) stays alone on its line
            f.write("\n")
    with progress(f"auditing {len(todo)} task(s)", len(todo)) as advance, results.open("a") as sink:
        asyncio.run(run_all(advance, sink))
    wall = time.monotonic() - t0

    hashes = list(dict.fromkeys(t.content_hash() for t in loaded))
    records = [done[h] for h in hashes]
    summary = summarize(records)
    if json_out:
        print_json({"tasks": [{k: r[k] for k in ("task", "hash", "source", "status", "broken_by", "hackable")} | {"reasons": _reasons(r)}
                              for r in records], "summary": summary, "results": str(results)})
    else:
        from rich.markup import escape

        table = Table(title=f"envevo audit ({env}, red team {red_team}, {len(records)} task(s), {wall:.0f} s)")
        for col in ("task", "status", "broken by", "first reason"):
            table.add_column(col, overflow="fold")
        status = {"ok": "[green]ok[/]", "fail": "[bold red]FAIL[/]", "inconclusive": "[yellow]inconclusive[/]"}
        for r in records:
            reasons = _reasons(r)
            table.add_row(r["task"], status[r["status"]], escape(", ".join(r["broken_by"])) or "-",
                          escape(reasons[0].splitlines()[0]) if reasons else "-")
        out.print(table)
        classes = ", ".join(f"{k} {n}" for k, n in summary["failure_classes"].items()) or "none"
        out.print(f"{summary['tasks']} task(s): {summary['status']}; failure classes: {classes}; "
                  f"hackable {summary['hackable']}/{summary['tasks']} ({100 * summary['hackable_fraction']:.0f}%)")
        err.print(f"results: {results}")
    raise typer.Exit(0 if all(r["ok"] for r in records) else 1)


def _reasons(rec: dict) -> list[str]:
    v = rec.get("verdict") or {}
    return [f"{name}: {r}" for name in ("oracle", "invalid_test", "red_team") if name in v for r in v[name]["reasons"]]
