"""Harden one task: infer its artifacts from the reference solution's run, move its tests to a separate verifier and
its test-time downloads to build time, and prove the copy (oracle, nop, red team, mutation) before writing it.

Nothing is written to `out_dir` until the hardened copy's proof passes; then `save` renames it into place whole, so
a crash or Ctrl-C leaves either no copy or a complete, proved one. Every sandbox is stopped on the way out (the
runtime's sessions and trials stop theirs, also on cancellation)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from envevo.harden._artifacts import Choice, choose_artifacts
from envevo.harden._probe import Probe, ProbeError, probe_changes
from envevo.harden._result import HardenResult, ProofSide
from envevo.harden._rewrite import harden_config, is_separate, move_downloads, record_provenance
from envevo.harden._scan import LiveProbe, grading_downloads, live_probes, named_paths
from envevo.runtime import DEFAULT_ENGINE, TrialOutcome
from envevo.sandbox import runnable_copy
from envevo.task import ImageMap, Task, diff_tasks, save
from envevo.verify import ORACLE, RED_TEAM, TrialVerifier, Verdict, default_verifiers, verify_tasks

SUGGEST_LIVE = ("make the result a file: have solution/solve.sh (and the instruction) write what the test asks the "
                "running service (e.g. the response of {what}) to a file under the task's work dir, and test that "
                "file; or have tests/test.sh start the service from the declared files before querying it (then the "
                "verifier runs the agent's code: see docs/trust.md)")


def _live_reason(probes: list[LiveProbe]) -> str:
    first = probes[0]
    more = f" (and {len(probes) - 1} more)" if len(probes) > 1 else ""
    return (f"the tests query {first.what}, a process the solution leaves running ({first.file}:{first.line} "
            f"`{first.text[:80]}`){more}: a separate verifier cannot see it, so the task stays hackable")


async def _verify(name: str, task: Task, env: str, mapping: ImageMap, work: Path, verifiers, concurrency: int,
                  gate: asyncio.Semaphore | None, on_trial_done: Callable[[TrialOutcome], None] | None) -> Verdict:
    task_dir, _ = runnable_copy(task, env, mapping, work / "_tasks")
    verdicts = await verify_tasks([(name, task_dir)], work, env=env, verifiers=verifiers, concurrency=concurrency,
                                  on_trial_done=on_trial_done, gate=gate)
    return verdicts[0]


def _oracle_failed(v: Verdict) -> str | None:
    """Why the reference solution fails its own tests; None when it passes or the host could not tell (a trial that
    ended on this host's infrastructure says nothing about the task)."""
    rep = v.reports.get(ORACLE)
    if rep is None or rep.passed or rep.inconclusive:
        return None
    facts = rep.findings
    if facts and all(f.error_kind is not None and f.error_kind.is_infrastructure for f in facts):
        return None
    return "; ".join(rep.reasons)[:300] or "the reference solution does not pass"


def _host_failed(v: Verdict) -> bool:
    """Every oracle run ended on this host's infrastructure: nothing is known about the task."""
    rep = v.reports.get(ORACLE)
    facts = rep.findings if rep is not None and not rep.passed else []
    return bool(facts) and all(f.error_kind is not None and f.error_kind.is_infrastructure for f in facts)


def _reasons(v: Verdict, verifier: str) -> list[str]:
    rep = v.reports.get(verifier)
    return rep.reasons if rep is not None else []


def _inconclusive(v: Verdict) -> str:
    return "; ".join(r for r in v.reasons)[:400] or "no evidence either way on this host"



def _hardened_copy(task: Task, probe: Probe, result: HardenResult, source_hash: str) -> Task:
    """The copy with its tests in a separate verifier, the chosen artifacts, downloads at build time, provenance;
    what was chosen, dropped and changed goes into `result`."""
    named, names = named_paths(task)
    choice: Choice = choose_artifacts(probe.changed, named, names)
    result.artifacts, result.dropped = choice.artifacts, probe.dropped + choice.dropped
    if probe.truncated:
        result.dropped.append(f"the listing was cut at {len(probe.changed)} entries: a solution that changes more "
                              "files is hardened from the first ones only")
    hardened = task.model_copy(deep=True)
    moved, result.cannot_move = move_downloads(hardened, result.downloads)
    uvx = any(d.kind == "uvx" and d.action != "kept" for d in result.downloads)
    # The verifier's network goes off only when nothing it runs still fetches.
    result.changes = harden_config(hardened, choice.artifacts, offline=not result.cannot_move, uv_offline=uvx) + moved
    record_provenance(hardened, source_hash, task.source_format, result.changes, choice.artifacts)
    hardened.check()
    return hardened


async def harden_task(task: Task, out_dir: Path, *, env: str = DEFAULT_ENGINE, jobs_dir: Path, repeats: int = 2,
                      mutation: str = "sample:4", concurrency: int = 3, image_map: ImageMap | None = None,
                      overwrite: bool = False, gate: asyncio.Semaphore | None = None,
                      on_trial_done: Callable[[TrialOutcome], None] | None = None, dest_name: str | None = None,
                      red_team: str = "on", before: Verdict | None = None,
                      verifiers: Sequence[TrialVerifier] | None = None) -> HardenResult:
    """Harden `task` into `out_dir/<dest_name>` (default: the source dir's name) and prove it.

    Statuses: hardened (written), unchanged (already separate and clean: written as it was), not hardened (the
    reason and, for live state, the evidence and a suggested rewrite; nothing written), inconclusive (this host
    could not decide: nothing written). `before`: the task's verdict when the caller has one already (evolve's seed
    gate), so it is not verified twice; `verifiers`: the caller's (default: `default_verifiers` with the red team
    and `mutation`)."""
    t0 = time.monotonic()
    name = dest_name or (task.source.name if task.source else task.name.rsplit("/", 1)[-1])
    mapping = image_map or ImageMap()
    source_hash = task.content_hash()
    result = HardenResult(task=task.name, source=str(task.source or name), status="inconclusive")
    # Every shell script of the tests (a TB1 task's run-tests.sh is called by the converted test.sh).
    result.downloads = [d for path in sorted(p for p in task.files if p.startswith("tests/") and p.endswith(".sh"))
                        for d in grading_downloads(task.read_text(path), path)]
    result.live_state = live_probes(task)
    verifiers = list(verifiers) if verifiers is not None else default_verifiers(repeats, red_team=red_team,
                                                                                 mutation=mutation)
    work = jobs_dir / name
    timeout = float((task.config.get("agent") or {}).get("timeout_sec") or 900)

    def done(status, reason: str) -> HardenResult:
        result.status, result.reason, result.seconds = status, reason, round(time.monotonic() - t0, 1)
        return result

    async def build_and_prove() -> tuple[Task, Verdict] | ProbeError:
        """The probe, the hardened copy, its proof: run beside the proof of the task as given (the pool stays full;
        the copy's trials are cancelled if the original shows there is nothing to harden)."""
        try:
            probe = await probe_changes(runnable_copy(task, env, mapping, work / "_probe")[0], env,
                                        timeout_sec=timeout)
        except ProbeError as exc:
            return exc
        hardened = _hardened_copy(task, probe, result, source_hash)
        after = await _verify(name, hardened, env, mapping, work / "after", verifiers, concurrency, gate,
                              on_trial_done)
        return hardened, after

    speculative = not is_separate(task) and not result.live_state
    after_job = asyncio.ensure_future(build_and_prove()) if speculative else None
    try:
        if before is None:
            before = await _verify(name, task, env, mapping, work / "before", verifiers, concurrency, gate,
                                   on_trial_done)
        result.before = ProofSide.of(before)
        stop = None
        if (failed := _oracle_failed(before)) is not None:
            stop = done("not hardened", f"nothing to learn from: the reference solution fails its own tests ({failed})")
        elif result.before.verifies is None or _host_failed(before):
            stop = done("inconclusive", f"the task could not be run here: {_inconclusive(before)}")
        elif result.live_state:
            result.suggestion = SUGGEST_LIVE.format(what=result.live_state[0].what)
            stop = done("not hardened", _live_reason(result.live_state))
        elif is_separate(task):
            if before.ok:
                result.out, result.after = str(save(task, out_dir / name, overwrite=overwrite)), result.before
                stop = done("unchanged", "the tests already run in a separate verifier and every check passes")
            else:
                stop = done("not hardened", "the tests already run in a separate verifier, yet the proof fails "
                            f"({'; '.join(before.reasons)[:300]}): a sandbox cannot fix a lenient grader; tighten "
                            "the tests")
        if stop is not None:
            return stop
        assert after_job is not None
        proved = await after_job
    finally:
        if after_job is not None and not after_job.done():
            after_job.cancel()
            await asyncio.gather(after_job, return_exceptions=True)  # its sandboxes are stopped before we return
    if isinstance(proved, ProbeError):
        return done("inconclusive", f"the solution's changes could not be listed: {proved}")
    hardened, after = proved
    result.diff = "\n".join(c.diff for c in diff_tasks(task, hardened).changes)
    result.after = ProofSide.of(after)
    if after.ok or (result.after.verifies and result.after.red_team == "clean"):
        # Mutation survivors make a task weak, not hackable: written, with the score beside it.
        result.out = str(save(hardened, out_dir / name, overwrite=overwrite))
        return done("hardened", "tests in a separate verifier, proved: oracle passes, nop fails, no exploit scores")
    if (result.after.status == "inconclusive" and result.after.verifies is None) or _host_failed(after):
        return done("inconclusive", f"the hardened copy could not be proved here: {_inconclusive(after)}")
    if result.after.verifies is False:
        return done("not hardened", "the hardened copy fails its proof (oracle or nop) in the separate verifier: "
                    f"{'; '.join(after.reasons)[:300]}")
    return done("not hardened", f"the hardened copy is still {result.after.red_team}: "
                f"{'; '.join(f'{RED_TEAM}: {r}' for r in _reasons(after, RED_TEAM))[:300]}")
