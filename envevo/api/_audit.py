"""`audit(tasks, config, out_dir=...)`: every verifier over a Harbor dataset or any set of tasks, one record per task
appended to `out_dir/audit.jsonl` as its verdict is known (keyed by content hash), so a killed audit resumes where
it stopped; optionally a proved hardened copy of each task harden would fix."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo.api._check import Checking
from envevo.api._config import CheckConfig
from envevo.api._host import Notify, Progress, no_progress, quiet, verdicts_exit_code
from envevo.api._verify import Refusal
from envevo.errors import ExitCode, UserError
from envevo.verify import AUDIT_RESULTS, MUTATION, ORACLE

if TYPE_CHECKING:
    from envevo.harden import HardenPreview
    from envevo.task import Task


@dataclass
class AuditResult:
    """The records of the audited tasks (this run's and a resumed audit's earlier ones), in the order given."""

    records: list[dict[str, Any]]
    summary: dict[str, Any]
    results: Path  # the audit.jsonl the records are in
    refused: list[Refusal]
    previews: dict[str, str] = field(default_factory=dict)  # by hash: what `envevo harden` would fix, or why not
    hardened: dict[str, dict[str, Any]] = field(default_factory=dict)  # by hash: the hardened copy's status and dir
    wall_s: float = 0.0
    usage: list[dict[str, Any]] = field(default_factory=list)  # this invocation's model usage
    budget_stop: str | None = None
    ran: bool = True  # False: no task could even be loaded, nothing was audited

    @property
    def exit_code(self) -> int:
        """0 ok; 1 some task fails (a refused one counts); 3 inconclusive; 4 weak; 2 no task could be loaded."""
        if not self.ran:
            return int(ExitCode.USAGE)
        return verdicts_exit_code([r["status"] for r in self.records] + ["fail"] * len(self.refused))


def harden_preview(task: Task, rec: dict) -> HardenPreview:
    """What `envevo harden` would fix in an audited task: its files, and what the audit's verdict broke it with."""
    from envevo.harden import preview_harden

    broke = [c.split(":", 1)[1] for c in rec.get("broken_by", []) if c.startswith("exploit:")]
    return preview_harden(task, broken_by=broke, oracle_fails=ORACLE in rec.get("broken_by", []))


async def audit(tasks: list[Path], config: CheckConfig | None = None, *, out_dir: Path = Path("audit"),
                resume: bool = False, harden_dir: Path | None = None, notify: Notify = quiet,
                progress: Progress = no_progress) -> AuditResult:
    """Audit tasks (dataset folders, task dirs or folders of them) into `out_dir`; with `resume`, skip the tasks
    whose content hash already has a record there. Raises UserError for bad input, before any container."""
    from envevo._home import private_dir
    from envevo.harden import OutFolder, harden_task, out_name
    from envevo.task import load_task_batch, unique_by_hash
    from envevo.verify import audit_record, end_torn_line, load_audit_results, summarize_audit, verify_tasks

    config = config or CheckConfig()
    sandbox, verification = config.sandbox, config.verification
    out_dir = out_dir.resolve()
    results = out_dir / AUDIT_RESULTS
    if results.is_file() and not resume:
        raise UserError(f"{results} holds an earlier audit: pass --resume to continue it, or choose another --out")
    checking = await Checking.open(config, notify)
    mapping = checking.mapping
    # Every task validated before any container starts; one that is refused gets its line, the batch goes on.
    loaded, refused = load_task_batch(tasks)
    if not loaded:
        return AuditResult([], {}, results, refused, ran=False)
    if harden_dir is not None and verification.red_team == "off":
        raise UserError("--harden proves each copy with the red team: drop --red-team off, or drop --harden")
    # Checked before any container starts; the marker written first, then after each copy.
    folder = OutFolder(harden_dir, [out_name(t) for t in loaded], overwrite=resume) if harden_dir else None
    hardened: dict[str, dict] = {}
    done = load_audit_results(results)
    todo = unique_by_hash(loaded, skip=done)
    if done:
        notify(f"resuming: {len(loaded) - len(todo)} of {len(loaded)} task(s) already audited in {results}")
    private_dir(out_dir)  # 0700 when envevo creates it: trial logs hold task output
    jobs = out_dir / "trials"
    verifiers = checking.verifiers
    env, concurrency = sandbox.env, sandbox.trial_concurrency
    t0 = time.monotonic()

    async def run_all(advance, sink) -> None:
        gate = asyncio.Semaphore(concurrency)  # trials at once, over all tasks
        in_flight = asyncio.Semaphore(max(2, 2 * concurrency))  # tasks prepared at once (their copies on disk)

        async def one(t) -> None:
            async with in_flight:
                try:
                    task_dir, subs = checking.runnable(t, jobs / "_tasks")
                except UserError as exc:  # refused for this task only: the others go on
                    refused.append((t.source or Path(t.name), str(exc)))
                    advance(f"{t.name} → refused")
                    return
                key = f"{t.name}-{t.content_hash()[:10]}"
                (v,) = await verify_tasks([(key, task_dir)], jobs, env=env, verifiers=verifiers, gate=gate,
                                          strict=verification.strict)
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
                notify(f"{t.name}: {r.status}" + (f" → {r.out}" if r.out else f": {r.reason}"))

        await asyncio.gather(*(one(t) for t in todo))

    if folder is not None:
        folder.start()
    end_torn_line(results)
    with progress(f"auditing {len(todo)} task(s)", len(todo)) as advance, results.open("a") as sink:
        await run_all(advance, sink)
    wall = time.monotonic() - t0
    by_hash = {t.content_hash(): t for t in loaded}
    records = [done[h] for h in by_hash if h in done]
    previews = {r["hash"]: harden_preview(by_hash[r["hash"]], r).text for r in records}
    return AuditResult(records, summarize_audit(records), results, refused, previews, hardened, wall,
                       checking.usage, checking.budget_stop)
