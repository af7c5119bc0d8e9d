"""Verify many tasks: every verifier's trials in one bounded pool, then one Verdict per task."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

from envevo.errors import TaskError
from envevo.runtime import DEFAULT_ENGINE, TrialOutcome, TrialSpec
from envevo.task import Task, dir_hash, host_env_needs
from envevo.verify._config import VerificationConfig
from envevo.verify._mutation import MutantWriter
from envevo.verify._plugins import spec_of
from envevo.verify._rubric import TaskVerifier
from envevo.verify._unbuilt import collapse_unbuilt
from envevo.verify._verdict import Unmet, Verdict, VerifierReport
from envevo.verify._verifiers import ComparesReference, TaskAttacker, TaskJudge, TaskPreparer, TrialVerifier


def default_verifiers(repeats: int = 2, red_team: str = "off", mutation: str = "off", *, model: object | None = None,
                      learn_rubric: Path | None = None, mutant_writer: MutantWriter | None = None,
                      written: int = 3, probes: bool = True) -> list[TrialVerifier]:
    """The container verifiers of a candidate: oracle and invalid-test, plus the red team when `red_team` is
    `on` (every exploit) or `sample:N` (a deterministic sample of N exploits per candidate), and the mutation
    verifier likewise by `mutation` (every near-miss solution, or a sample of N). `model` and `learn_rubric` go to
    the red team's agent exploits (see `RedTeamVerifier`); `mutant_writer` adds model-written near misses to the
    mutation verifier's; `probes` False leaves out the red team's false-fail probes."""
    config = VerificationConfig(repeats=repeats, red_team=red_team, mutation=mutation, learn_rubric=learn_rubric,
                                model_mutants=written, probes=probes)
    return config.verifiers(model=model, mutant_writer=mutant_writer)


def _check_unchanged(before: dict[Path, str]) -> None:
    """A task is immutable while it is verified: a verdict on files that changed under it says nothing.

    No container can write the host (envevo/runtime), so a change here is another process's doing; it is an error
    that names the dir, never a silent re-run."""
    for task_dir, digest in before.items():
        now = dir_hash(task_dir)
        if now != digest:
            raise TaskError(f"{task_dir} changed while it was verified (content hash {digest[:12]} -> {now[:12]}): its "
                            "verdict is void; restore the task (e.g. from its content-addressed copy in the store) "
                            "and verify it again")


def unmet_on_host(task_dir: Path) -> Unmet | None:
    """What keeps `task_dir`'s trials from running at all: host variables its ``${VAR}`` templates name that the user
    did not pass with --pass-env (the runtime refuses those trials; a failed oracle would blame the task)."""
    try:
        config = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # the trials report what is wrong with it
    needs = host_env_needs(config)
    return Unmet(needs=needs) if needs else None


async def verify_tasks(
    tasks: Sequence[tuple[str, Path]],
    trials_dir: Path,
    env: str = DEFAULT_ENGINE,
    verifiers: Sequence[TrialVerifier] | None = None,
    concurrency: int = 3,
    retries: int = 1,
    on_trial_done: Callable[[TrialOutcome], None] | None = None,
    gate: asyncio.Semaphore | None = None,
    strict: bool = False,
) -> list[Verdict]:
    """Verify (name, runnable task dir) pairs. A task is ok only if every verifier passes; one whose only failing is
    near misses its tests miss is `weak`, unless `strict` (then `fail`)."""
    verifiers = list(verifiers) if verifiers is not None else default_verifiers()
    before = {task_dir: dir_hash(task_dir) for _, task_dir in tasks}
    # Named before any trial: a task this host cannot run gets no trials and an inconclusive verdict.
    unmet = {i: u for i, (_, task_dir) in enumerate(tasks) if (u := unmet_on_host(task_dir)) is not None}
    # Model-written mutants are asked for first: their trials are planned with the others.
    await asyncio.gather(*(v.prepare(task_dir) for i, (_, task_dir) in enumerate(tasks) if i not in unmet
                           for v in verifiers if isinstance(v, TaskPreparer)))
    comparing = [v for v in verifiers if isinstance(v, ComparesReference)]
    # The verifiers whose trials run the reference solution (the oracle): what a comparing verifier reads.
    reference = {v.name for v in verifiers if (s := spec_of(v.name)) is not None and s.reference}
    plan: list[tuple[int, str, TrialSpec]] = []  # (task index, verifier name, spec)
    for i, (name, task_dir) in enumerate(tasks):
        if i in unmet:
            continue
        for v in verifiers:
            for spec in v.trial_specs(task_dir, env, trials_dir / name):
                if comparing and v.name in reference:  # the full solution's end state, to compare near misses with
                    spec = spec.model_copy(update={"fingerprint": True})
                plan.append((i, v.name, spec))

    def done(k: int, outcome: TrialOutcome) -> None:
        if on_trial_done is not None:
            on_trial_done(outcome.model_copy(update={"subject": plan[k][2].subject}))

    from envevo.runtime import run_trials  # imports Harbor: only when trials really run

    # One bound for the pool's trials and the agent exploits' sandboxes (the red team's LLM hacker).
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = gate or asyncio.Semaphore(concurrency)
    attacks = [v.attack_task(task_dir, env, trials_dir / name, gate)
               for i, (name, task_dir) in enumerate(tasks) if i not in unmet
               for v in verifiers if isinstance(v, TaskAttacker)]
    outcomes: list[TrialOutcome]
    outcomes, *_ = await asyncio.gather(
        run_trials([spec for _, _, spec in plan], concurrency=concurrency, retries=retries, on_done=done, gate=gate),
        *attacks)
    # What each trial tried (an exploit, a mutant) is its spec's, whatever the engine kept of it.
    outcomes = [o.model_copy(update={"subject": spec.subject}) for (_, _, spec), o in zip(plan, outcomes, strict=True)]
    _check_unchanged(before)

    verdicts = []
    for i, (name, task_dir) in enumerate(tasks):
        if i in unmet:
            skipped = {v.name: VerifierReport(name=v.name, passed=False, inconclusive=True) for v in verifiers}
            verdicts.append(Verdict(task=name, task_dir=task_dir, ok=False, reports=skipped, unmet=unmet[i], strict=strict))
            continue
        reports = {}
        for c in comparing:
            c.reference(task_dir, [o for (ti, vn, _), o in zip(plan, outcomes, strict=True) if ti == i and vn in reference])
        for v in verifiers:
            runs = [o for (ti, vn, _), o in zip(plan, outcomes, strict=True) if ti == i and vn == v.name]
            # A verifier that also reads the task's files (the red team's static exploits) judges with its dir.
            reports[v.name] = v.judge_task(task_dir, runs) if isinstance(v, TaskJudge) else v.judge(runs)
        reports = collapse_unbuilt(reports)
        verdicts.append(
            Verdict(
                task=name,
                task_dir=task_dir,
                ok=all(r.passed for r in reports.values()),
                reports=reports,
                strict=strict,
            )
        )
    return verdicts


async def verify_candidate(
    task: Task,
    task_dir: Path,
    trials_dir: Path,
    env: str = DEFAULT_ENGINE,
    verifiers: Sequence[TrialVerifier] | None = None,
    checks: Sequence[TaskVerifier] = (),
    gate: asyncio.Semaphore | None = None,
    on_trial_done: Callable[[TrialOutcome], None] | None = None,
    strict: bool = True,
) -> Verdict:
    """One task through the container verifiers and the file checks (e.g. the rubric), all in parallel. `strict`
    (envevo's own candidates): a surviving near miss fails it; a seed is judged with `strict=False` unless the run
    asks for `--mutation strict`, and may then be `weak`."""
    # The container verifiers and the file checks run at the same time.
    trials = asyncio.ensure_future(
        verify_tasks([(task.name, task_dir)], trials_dir, env=env, verifiers=verifiers, gate=gate,
                     on_trial_done=on_trial_done, strict=strict))
    reports = await asyncio.gather(*(c.check(task, task_dir) for c in checks))
    verdict = (await trials)[0]
    all_reports = {**verdict.reports, **{r.name: r for r in reports}}
    return Verdict(task=verdict.task, task_dir=task_dir, ok=verdict.unmet is None and all(r.passed for r in all_reports.values()),
                   reports=all_reports, unmet=verdict.unmet, strict=strict)
