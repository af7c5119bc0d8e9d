"""`envevo audit`: oracle, invalid-test, the red team and the mutation verifier over any Harbor dataset folder or set
of tasks.

Results go to `--out DIR/audit.jsonl`, one line per task keyed by its content hash, appended as each task's
verdict is known; `--resume` skips the tasks already there, so a killed audit of thousands of tasks re-runs only
what was left. All tasks' trials share one bounded pool, and each task's record is written the moment its last trial ends,
so a crash loses only the tasks in flight.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import (
    STATUS,
    check_output,
    check_red_team,
    err,
    out,
    pass_env,
    preflight,
    print_json,
    progress,
    usage_table,
    user_errors,
    verdicts_exit_code,
)
from envevo.cli._verifier_model import USAGE_TITLE, budget_stop, model_usage, verification_model
from envevo.cli.verify_cmd import REFUSED, check_mutation, print_refused, refusal
from envevo.errors import ExitCode, UserError
from envevo.verify import AUDIT_RESULTS as RESULTS
from envevo.verify import MUTATION, ORACLE, label_of
from envevo.verify import load_audit_results as load_results
from envevo.verify import summarize_audit as summarize

__all__ = ["RESULTS", "audit", "load_results", "summarize"]  # the library's names, as tests and scripts import them here


def mutation_cell(rec: dict) -> str:
    """A record's mutation score and survivors, as the audit table shows them: "3/4", "1/2 (survived:
    prefix-3of4)", "no mutants", or "-" (not run, or a record from before the audit ran it)."""
    m = rec.get(MUTATION)
    if not m:
        return "-"
    if not m["run"]:
        return "no mutants"
    text = m["score"] or "0/0"
    notes = ([f"survived: {', '.join(m['survived'])}"] if m["survived"] else []) + (
        [f"{m['inconclusive']} inconclusive"] if m["inconclusive"] else []) + (
        [f"equivalent: {', '.join(m['equivalent'])}"] if m.get("equivalent") else [])
    return text + (f" ({'; '.join(notes)})" if notes else "")


@user_errors
def audit(
    tasks: Annotated[list[Path], typer.Argument(help="Harbor dataset folders, task dirs (Harbor or Terminal-Bench 1), "
                                                "or folders of tasks.")],
    out_dir: Annotated[Path, o.out_option("Where results (audit.jsonl) and trial logs go.")] = Path("audit"),
    resume: Annotated[bool, typer.Option("--resume", help="Skip tasks whose content hash already has a result in "
                                         "--out.")] = False,
    env: o.Env = o.ENV,
    repeats: o.Repeats = o.REPEATS,
    red_team: o.RedTeam = o.RED_TEAM,
    mutation: o.Mutation = o.MUTATION,
    concurrency: o.Concurrency = o.CONCURRENCY,
    image_map: o.ImageMapOpt = [],  # noqa: B006 (typer copies list defaults)
    config: o.ConfigFile = None,
    pass_env_names: o.PassEnv = [],  # noqa: B006 (typer copies list defaults)
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    model_mutants: o.ModelMutants = 0,
    max_tokens: o.CommandMaxTokens = None,
    json_out: o.Json = False,
    executor_name: o.ExecutorName = o.EXECUTOR,
    ray_address: o.RayAddress = None,
    max_sandboxes: o.MaxSandboxes = None,
    start_rate: o.StartRate = None,
    fail_on: Annotated[list[str], typer.Option(
        "--fail-on", metavar="CLASS", help="Exit 1 only if one of these broke some task (repeat, or comma-separate): "
        "an exploit (reward_forgery, answer_flooding, …), oracle, invalid_test, red_team (any exploit), mutation "
        "(any surviving mutant) or a class as listed (mutant:wrong). Default: any failure.")] = [],  # noqa: B006
    sarif: Annotated[Path | None, typer.Option(
        "--sarif", metavar="FILE", help="Also write the findings as SARIF 2.1.0 (one result per finding; rule = "
        "verifier/exploit class; level error for broke/failed, warning for inconclusive or a false fail).")] = None,
    harden_dir: Annotated[Path | None, typer.Option(
        "--harden", metavar="DIR", help="Also write a hardened copy of each task harden would fix into DIR, proved as "
        "`envevo harden` proves it (the audit's verdict is its before side: the task is not verified twice). Needs "
        "the red team; with --resume, DIR may hold this audit's earlier copies.")] = None,
) -> None:
    """Audit tasks for soundness and reward hacks: per task, which verifier failed, which exploit broke it, and its
    mutation score (near-miss solutions killed of those run) with the surviving mutants by name. The red team's LLM
    hacker and --model-mutants use --model (else the judge's model of --config's [llm]).

    A task whose tests miss a near miss that changes its end state is weak, not fail (unless --mutation strict).

    --json prints {tasks: [...], summary: {...}, results: PATH, usage: [...]}; a task's status is ok, weak,
    inconclusive or fail, and its mutation entry lists the survivors and the equivalent mutants.

    A task that cannot be loaded or run as given (a malformed task.toml, a compose file that mounts the host) is
    refused with its one line, in the table and in --json's `refused`; the others are audited.

    Each task's row says what `envevo harden` would fix (tests to a separate verifier, artifacts, test-time
    downloads) or why it cannot (a test that asks a served port; a lenient grader), read from its files.

    Exit code: 0 every task ok; 1 some task fails (a refused task counts as failed); 3 none fails but some verdict is
    inconclusive (this host could not run it); 4 none fails nor is inconclusive but some task is weak (its tests miss
    a near miss); 2 bad input, or every task refused."""
    from envevo._home import private_dir
    from envevo.harden import OutFolder, harden_task, out_name
    from envevo.llm import verifiers_with_model
    from envevo.sandbox import runnable_copy
    from envevo.task import load_image_map, load_task_batch, unique_by_hash
    from envevo.verify import (
        audit_record,
        audit_sarif,
        end_torn_line,
        fail_on_hits,
        mutation_strict,
        record_reasons,
        verify_tasks,
    )

    check_red_team(red_team)
    check_mutation(mutation)
    wanted = check_fail_on(fail_on)
    runtime = verification_model(config, model, base_url, api_key_env, red_team=red_team, mutation=mutation,
                                 model_mutants=model_mutants, max_tokens=max_tokens)
    out_dir = out_dir.resolve()
    check_output(out_dir, "--out", folder=True)
    results = out_dir / RESULTS
    if results.is_file() and not resume:
        raise UserError(f"{results} holds an earlier audit: pass --resume to continue it, or choose another --out")
    pass_env(pass_env_names, config)
    preflight(env)
    from envevo.evolve import scale_out

    scale_out(executor_name, ray_address, max_sandboxes, start_rate, trials=True)
    mapping = load_image_map(image_map, config)
    # Every task validated before any container starts; one that is refused gets its line, the batch goes on.
    loaded, refused = load_task_batch(tasks)
    if not loaded:
        print_refused(refused, json_out)
        raise typer.Exit(ExitCode.USAGE)  # nothing could be audited
    if harden_dir is not None and red_team == "off":
        raise UserError("--harden proves each copy with the red team: drop --red-team off, or drop --harden")
    # Checked before any container starts; the marker written first, then after each copy.
    folder = OutFolder(harden_dir, [out_name(t) for t in loaded], overwrite=resume) if harden_dir else None
    hardened: dict[str, dict] = {}
    done = load_results(results)
    todo = unique_by_hash(loaded, skip=done)
    if done:
        err.print(f"resuming: {len(loaded) - len(todo)} of {len(loaded)} task(s) already audited in {results}")
    private_dir(out_dir)  # 0700 when envevo creates it: trial logs hold task output
    jobs = out_dir / "trials"
    verifiers = verifiers_with_model(repeats, red_team=red_team, mutation=mutation, runtime=runtime,
                                     written=model_mutants)
    t0 = time.monotonic()

    async def run_all(advance, sink) -> None:
        gate = asyncio.Semaphore(concurrency)  # trials at once, over all tasks
        in_flight = asyncio.Semaphore(max(2, 2 * concurrency))  # tasks prepared at once (their copies on disk)

        async def one(t) -> None:
            async with in_flight:
                try:
                    task_dir, subs = runnable_copy(t, env, mapping, jobs / "_tasks")
                except UserError as exc:  # refused for this task only: the others go on
                    refused.append((t.source or Path(t.name), str(exc)))
                    advance(f"{t.name} → refused")
                    return
                key = f"{t.name}-{t.content_hash()[:10]}"
                (v,) = await verify_tasks([(key, task_dir)], jobs, env=env, verifiers=verifiers, gate=gate,
                                          strict=mutation_strict(mutation))
            v.substitutions = subs
            rec = audit_record(t, v)
            sink.write(json.dumps(rec, default=str) + "\n")
            sink.flush()
            done[rec["hash"]] = rec
            classes = rec["broken_by"]
            score = f", mutation {rec[MUTATION]['score']}" if rec[MUTATION] and rec[MUTATION]["score"] else ""
            advance(f"{t.name} → {v.status}{' (' + ', '.join(classes) + ')' if classes else ''}{score}")
            if folder is not None and harden_preview(t, rec).kind == "fixable":
                r = await harden_task(t, folder.out, env=env, jobs_dir=out_dir / "harden", before=v,
                                      verifiers=verifiers, gate=gate, image_map=mapping, overwrite=True,
                                      dest_name=out_name(t))
                folder.add(r)
                hardened[rec["hash"]] = {"status": r.status, "reason": r.reason, "out": r.out}
                err.print(f"{t.name}: {r.status}" + (f" → {r.out}" if r.out else f": {r.reason}"), markup=False,
                          highlight=False)

        await asyncio.gather(*(one(t) for t in todo))

    if folder is not None:
        folder.start()
    end_torn_line(results)
    with progress(f"auditing {len(todo)} task(s)", len(todo)) as advance, results.open("a") as sink:
        asyncio.run(run_all(advance, sink))
    wall = time.monotonic() - t0

    by_hash = {t.content_hash(): t for t in loaded}
    records = [done[h] for h in by_hash if h in done]
    previews = {r["hash"]: harden_preview(by_hash[r["hash"]], r).text for r in records}
    summary = summarize(records)
    usage = model_usage(runtime)  # this invocation's (a resumed audit's earlier calls are not counted again)
    if json_out:
        print_json({"tasks": [{k: r[k] for k in ("task", "hash", "source", "status", "broken_by", "hackable")}
                              | {MUTATION: r.get(MUTATION), "reasons": record_reasons(r), "harden": previews[r["hash"]]}
                              | ({"hardened": hardened[r["hash"]]} if r["hash"] in hardened else {}) for r in records],
                    "summary": summary, "results": str(results), "usage": usage,
                    "refused": [refusal(d, why) for d, why in refused]})
    else:
        table = Table(title=f"envevo audit ({env}, red team {red_team}, mutation {mutation}, {len(records)} task(s), "
                            f"{wall:.0f} s)")
        for col in ("task", "status", "broken by", label_of(MUTATION), "first reason", "harden"):
            table.add_column(col, overflow="fold")
        for r in records:
            reasons = record_reasons(r)
            table.add_row(r["task"], STATUS[r["status"]], escape(", ".join(r["broken_by"])) or "-",
                          escape(mutation_cell(r)),
                          escape(reasons[0].splitlines()[0]) if reasons else "-", escape(previews[r["hash"]]))
        for d, why in refused:
            table.add_row(escape(d.name), REFUSED, "-", "-", escape(why.splitlines()[0]), "-")
        out.print(table)
        classes = ", ".join(f"{k} {n}" for k, n in summary["failure_classes"].items()) or "none"
        statuses = ", ".join(f"{n} {s}" for s, n in summary["status"].items())
        out.print(f"{summary['tasks']} task(s): {statuses}; failure classes: {classes}; "
                  f"hackable {summary['hackable']}/{summary['tasks']} ({100 * summary['hackable_fraction']:.0f}%); "
                  f"surviving mutants in {summary['mutant_survived']}/{summary['mutation_scored']} scored task(s)"
                  + (f" (mutation score {summary['mutation_score']})" if summary["mutation_score"] else ""))
        if usage:
            err.print(usage_table(USAGE_TITLE, usage))
        err.print(f"results: {results}")
    if (stop := budget_stop(runtime)) is not None:  # the cap stopped the model: said once, on stderr
        err.print(stop, markup=False, highlight=False, soft_wrap=True)
    if sarif is not None:
        write_sarif(sarif, audit_sarif(records))
        err.print(f"SARIF: {sarif}")
    if wanted:
        hits = {c for r in records for c in fail_on_hits(r, wanted)}
        if hits:
            err.print(f"--fail-on: {', '.join(sorted(hits))} broke some task")
        raise typer.Exit(1 if hits else 0)
    raise typer.Exit(verdicts_exit_code([r["status"] for r in records] + ["fail"] * len(refused)))


def harden_preview(task, rec: dict):
    """What `envevo harden` would fix in an audited task: its files, and what the audit's verdict broke it with."""
    from envevo.harden import preview_harden

    broke = [c.split(":", 1)[1] for c in rec.get("broken_by", []) if c.startswith("exploit:")]
    return preview_harden(task, broken_by=broke, oracle_fails=ORACLE in rec.get("broken_by", []))


def check_fail_on(values: list[str]) -> list[str]:
    """The classes `--fail-on` names (repeated or comma-separated), each known; one line naming the bad one else."""
    from envevo.verify import VERIFIER_CLASSES
    from envevo.verify.exploits import exploit_names

    wanted = [v.strip() for value in values for v in value.split(",") if v.strip()]
    known = set(exploit_names()) | set(VERIFIER_CLASSES)
    for w in wanted:
        kind, _, name = w.partition(":")
        if not (w in known or (kind == "exploit" and name in known) or (kind == "mutant" and name in ("prefix", "wrong", "skip"))):
            raise UserError(f"--fail-on {w!r}: not an exploit or verifier class; use one of "
                            f"{', '.join(sorted(known))}, or mutant:prefix|wrong|skip")
    return wanted


def write_sarif(path: Path, doc: dict) -> None:
    """Write the SARIF log whole (a temp file renamed), so a crash never leaves half a file a CI job would read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    tmp.replace(path)
