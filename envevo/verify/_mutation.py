"""The mutation verifier: near-miss solutions must all score 0, so that the tests check every step.

The oracle proves the full solution passes and invalid-test that the empty one fails; this verifier checks the
points in between (`_mutants.py`): each step done with its plausible mistake or skipped (procedural tasks), or
solve.sh cut short (any task). Each mutant runs as an oracle trial of a copy of the task whose only change is
solution/solve.sh, written under the trials dir (`_mutants/<task hash>/<task>__<mutant>/`; the task dir itself is
never touched), in the same bounded pool as the other verifiers' trials.

- reward above 0 → the mutant survived: the tests cannot tell that near miss from the solution (the mutant named
  with its diff, the paths where its end state differs from the solution's and the tests' output, which goes back
  to the Modifier as feedback). The report is `weak`: a task envevo did not write is then `weak`, not `fail`,
  unless judged strictly (`--mutation strict`; envevo's own candidates always are: `Verdict.strict`);
- reward above 0, and an end state equal to the full solution's on everything the tests can see → *equivalent*
  (envevo/verify/_end_state.py): the near miss changed nothing a test could check (a temp file left, a cache not
  cleared); reported, never a survivor nor a kill. An end state missing or unknown is judged as a survivor;
- reward 0, or the tests ran and wrote none → killed;
- the trial never reached the tests (a build or infrastructure failure, a timeout, no test output) → inconclusive.

The report carries the mutation score: killed / (killed + survived), with the counts, in `metrics`, and the keys of
its kills (`killed_keys`, envevo/verify/_mutant_keys.py). A candidate evolved from a parent `inherit`s the parent's
kills: a mutant whose key is among them is killed without a container run (residual edits leave most steps' inputs
byte for byte), and the report says how many were reused. Any byte changed in a mutant's inputs gives another key.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from envevo.runtime import ORACLE_AGENT, ErrorKind, TrialOutcome, TrialSpec
from envevo.task import Task, load_task, save
from envevo.verify._end_state import EndState, end_state_differences, read_end_state, visible_roots
from envevo.verify._evidence import quote, read_trial_logs
from envevo.verify._feedback import solution_run
from envevo.verify._mutant_keys import env_key, equivalence_key, step_failed, task_key
from envevo.verify._mutants import SOLVE, Mutant, WrittenMutant, model_mutants, task_mutants
from envevo.verify._plugins import MUTATION, VerifierSpec, is_strict, spec_of
from envevo.verify._verdict import Finding, FindingKind, VerifierReport, trial_finding

if TYPE_CHECKING:
    from envevo.verify._config import VerificationConfig

MUTANTS_DIR = "_mutants"  # under a task's trials dir: one task copy per mutant
_DIFFERS_SHOWN = 4  # paths named where a survivor's end state differs
_NEVER_RAN = (ErrorKind.ENVIRONMENT_BUILD_FAILURE, ErrorKind.INFRASTRUCTURE_ERROR, ErrorKind.AGENT_TIMEOUT)


EQUIVALENT = "equivalent:"  # how `killed_keys` marks the keys of equivalent mutants


def parse_mutation(value: str) -> tuple[bool, int | None]:
    """on, off, sample:N, or strict (every mutant, and a survivor fails even a task envevo did not write)."""
    return _spec().parse(value)


def mutation_strict(value: str) -> bool:
    """`--mutation strict`: surviving mutants fail every task, not only envevo's own candidates."""
    return is_strict(value)


def _spec() -> VerifierSpec:
    spec = spec_of(MUTATION)
    assert spec is not None  # built in
    return spec


def choose_mutants(task: Task, mutants: list[Mutant], sample: int | None) -> list[Mutant]:
    """All mutants, or a deterministic sample of N (by task content and mutant id). Wrong variants come first: a
    skipped step fails any test that checks its output, while a plausible mistake is what weak checks let through."""
    if sample is None or sample >= len(mutants):
        return list(mutants)
    key = task.content_hash()
    rank = {m.id: (m.kind == "skip", hashlib.sha256(f"{key}:{m.id}".encode()).hexdigest()) for m in mutants}
    chosen = {m.id for m in sorted(mutants, key=lambda m: rank[m.id])[:sample]}
    return [m for m in mutants if m.id in chosen]


def mutant_result(o: TrialOutcome) -> tuple[str, str]:
    """killed, survived or inconclusive, and for an inconclusive trial why."""
    if o.error_kind in _NEVER_RAN:
        return "inconclusive", f"the mutant never ran to the tests: {o.error_kind.value}: {o.error_message or '(no message)'}"
    if o.reward is not None and o.reward > 0:
        return "survived", ""
    if o.reward is None and not read_trial_logs(o.trial_dir).test_stdout.strip():
        return "inconclusive", f"the tests wrote no reward and no output: {o.error_kind.value}: {o.error_message or '(no message)'}"
    return "killed", ""


def mutation_score(killed: int, survived: int) -> float | None:
    return killed / (killed + survived) if killed + survived else None


def killed_keys(metrics: Mapping[str, object]) -> frozenset[str]:
    """The keys of the mutants a stored mutation report killed, and (prefixed EQUIVALENT) of those it found
    equivalent: what a child reuses (none in reports made before keys existed)."""
    def listed(name: str) -> list[str]:
        keys = metrics.get(name)
        return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []

    return frozenset(listed("killed_keys")) | {EQUIVALENT + k for k in listed("equivalent_keys")}


def inherited_kills(metrics: Mapping[str, object], generation: int) -> frozenset[str]:
    """What a child reuses from its parent's stored mutation report (the registry's `inherits`): `killed_keys`."""
    return killed_keys(metrics)


class MutantWriter(Protocol):
    """A model that writes near-miss solutions from a task's plan (envevo.llm.ModelMutantWriter): up to `n`, and
    why there are none when it gave nothing usable."""

    async def write(self, task: Task, n: int) -> tuple[list[WrittenMutant], str | None]: ...


@dataclass
class _TaskState:
    """What the verifier knows of one task dir; `inherit` may come before `plan`."""

    content_hash: str = ""  # of the task its plan was made from
    plan: tuple[list[Mutant], str] | None = None  # (chosen mutants, their source)
    count: int = 0  # mutants before sampling
    inherited: frozenset[str] = frozenset()  # the parent's killed keys
    keys: dict[str, list[str]] = field(default_factory=dict)  # mutant id → [task key, step key]
    reused: dict[str, str] = field(default_factory=dict)  # mutant id → the parent's key it matched
    equivalence: dict[str, str] = field(default_factory=dict)  # mutant id → its equivalence key
    reused_equivalent: dict[str, str] = field(default_factory=dict)  # mutant id → the parent's equivalence key
    references: list[EndState | None] | None = None  # the full solution's end states (the oracle's trials)
    roots: list[str] | None = None  # what the tests see of the container: None for all, else the artifacts


class MutationVerifier:
    """Every chosen mutant of the task's solution scores 0 in the sandbox."""

    name = MUTATION

    @classmethod
    def from_config(cls, config: VerificationConfig, *, sample: int | None, model: object | None = None,
                    mutant_writer: MutantWriter | None = None) -> MutationVerifier:
        return cls(sample=sample, writer=mutant_writer, written=config.model_mutants)

    def __init__(self, sample: int | None = None, writer: MutantWriter | None = None, written: int = 3):
        """`writer`: a model that adds up to `written` near misses of its own per task (`prepare`), beside the
        procedural or prefix mutants."""
        if sample is not None and sample < 1:
            raise ValueError("sample must be at least 1")
        self.sample = sample
        self.writer = writer
        self.written = written
        self._by_model: dict[str, tuple[list[Mutant], list[str]]] = {}  # task content hash → (mutants, notes)
        self._tasks: dict[Path, _TaskState] = {}  # resolved task dir → its state

    def _state(self, task_dir: Path) -> _TaskState:
        return self._tasks.setdefault(Path(task_dir).resolve(), _TaskState())

    def inherit(self, task_dir: Path, killed: frozenset[str]) -> None:
        """The parent's killed keys (`killed_keys`: equivalents' too), for the candidate at `task_dir`: its mutants
        with one of them are not run."""
        self._state(task_dir).inherited = frozenset(killed)

    def reference(self, task_dir: Path, runs: list[TrialOutcome]) -> None:
        """The full solution's trials of the task (run with `fingerprint`): their end states are what a surviving
        mutant is compared with."""
        self._state(task_dir).references = [read_end_state(o.trial_dir) for o in runs] or None

    def plan(self, task_dir: Path, fresh: bool = False) -> tuple[list[Mutant], str]:
        """The chosen mutants of a task and where they come from. `fresh` re-reads the task: a candidate dir may be
        edited between verifications (the Modifier's loop), and the judge must see the plan its trials ran."""
        state = self._state(task_dir)
        if fresh or state.plan is None:
            task = load_task(Path(task_dir).resolve())
            mutants, source = task_mutants(task)
            state.content_hash = task.content_hash()
            if written := self._by_model.get(state.content_hash, ([], []))[0]:
                source = "model" if not mutants else f"{source}+model"
                mutants = mutants + written
            state.count = len(mutants)
            state.plan = (choose_mutants(task, mutants, self.sample), source)
        return state.plan

    async def prepare(self, task_dir: Path) -> None:
        """Ask the writer (if any) for near misses of this task, once per task content, before its trials are
        planned. Each is checked to be a real variant (envevo/verify/_mutants.py `model_mutants`); the rejected
        ones, and a model that gave nothing, are noted in the report."""
        if self.writer is None or not Path(task_dir, "task.toml").exists():
            return
        task = load_task(Path(task_dir).resolve())
        digest = task.content_hash()
        if digest in self._by_model or not task.has(SOLVE):
            return
        try:
            reference = task.read_text(SOLVE)
        except UnicodeDecodeError:
            return
        written, error = await self.writer.write(task, self.written)
        mutants, notes = model_mutants(reference, written, task_mutants(task)[0])
        self._by_model[digest] = (mutants, ([f"the model wrote no mutants: {error}"] if error else []) + notes)

    def count_trials(self, task_dir: Path) -> int:
        if not Path(task_dir, "task.toml").exists():
            return 0
        return len(self.plan(task_dir)[0])

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        if not Path(task_dir, "task.toml").exists():
            return []  # a placeholder dir (the CLI counts trials with Path('.')): nothing to plan
        mutants, _ = self.plan(task_dir, fresh=True)
        state = self._state(task_dir)
        state.keys, state.reused, state.equivalence, state.reused_equivalent = {}, {}, {}, {}
        state.references = None
        if not mutants:
            return []
        task = load_task(Path(task_dir).resolve())
        state.roots = visible_roots(task)
        root = Path(trials_dir) / MUTANTS_DIR / task.content_hash()[:12]
        parent = state.inherited
        reference = task_key(task, env)
        specs = []
        for m in mutants:
            variant = task.model_copy(deep=True)
            variant.write(SOLVE, m.script, executable=True)
            keys = [task_key(variant, env)] + ([env_key(env, m.step_key)] if m.step_key else [])
            state.keys[m.id] = keys
            state.equivalence[m.id] = equivalence_key(keys[0], reference)
            if hit := next((k for k in keys if k in parent), None):
                state.reused[m.id] = hit  # the parent's kill on the same inputs: no container
                continue
            if EQUIVALENT + state.equivalence[m.id] in parent:  # equivalent there, beside the same full solution
                state.reused_equivalent[m.id] = state.equivalence[m.id]
                continue
            copy = root / f"{Path(task_dir).name[:40]}__{m.id}"  # the name trial progress shows
            if not (copy / SOLVE).is_file() or (copy / SOLVE).read_text(encoding="utf-8") != m.script:
                save(variant, copy, overwrite=True)
            trial = f"{Path(task_dir).name[:32]}__mut-{m.id}__{uuid.uuid4().hex[:6]}"
            specs.append(TrialSpec(task_dir=copy, agent=ORACLE_AGENT, env=env, trials_dir=trials_dir, trial_name=trial,
                                   subject=m.id, fingerprint=True))
        return specs

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        """Without the task dir the mutants are named by their trials only (and none is found equivalent)."""
        return self._judge([], "", runs)

    def judge_task(self, task_dir: Path, runs: list[TrialOutcome]) -> VerifierReport:
        mutants, source = self.plan(task_dir)
        state = self._state(task_dir)
        reused = state.reused
        ran = [m for m in mutants if m.id not in reused and m.id not in state.reused_equivalent]
        report = self._judge(ran, source, runs, state.references, state.roots)
        total = state.count
        report.metrics["mutants"] = total
        if len(mutants) < total:
            report.notes.append(f"{len(mutants)} of {total} mutants run (--mutation sample:{self.sample})")
        report.notes += self._by_model.get(state.content_hash, ([], []))[1]
        if reused:
            m = report.metrics
            m["killed"] += len(reused)
            m["score"] = mutation_score(m["killed"], m["survived"])
            report.notes.append(f"{len(reused)} of {len(mutants)} mutants reused from the parent: killed there on "
                                "byte-identical inputs, not run again")
        if state.reused_equivalent:
            report.metrics["equivalent"] += len(state.reused_equivalent)
            report.metrics["equivalent_mutants"] += sorted(state.reused_equivalent)
            report.notes.append(f"{len(state.reused_equivalent)} of {len(mutants)} mutants reused from the parent as "
                                "equivalent: same inputs, same full solution, not run again")
        report.metrics["reused"] = len(reused) + len(state.reused_equivalent)
        report.metrics["killed_keys"] = sorted(set(reused.values()) | self._kill_keys(state.keys, ran, runs))
        report.metrics["equivalent_keys"] = sorted(set(state.reused_equivalent.values()) | {
            state.equivalence[m] for m in report.metrics["equivalent_mutants"] if m in state.equivalence})
        return report

    def _kill_keys(self, keys: dict[str, list[str]], ran: list[Mutant], runs: list[TrialOutcome]) -> set[str]:
        """The keys the killed runs certify: the task key always; the step key only when the trial failed one of the
        step's own checks (a kill by a later step's check says nothing about this step's inputs alone)."""
        by_id = {m.id: m for m in ran}
        out: set[str] = set()
        for i, o in enumerate(runs):
            mid = o.subject or (ran[i].id if i < len(ran) else None)
            m = by_id.get(mid) if mid is not None else None
            if m is None or mid not in keys or mutant_result(o)[0] != "killed":
                continue
            out.add(keys[mid][0])
            if len(keys[mid]) > 1 and step_failed(m.step_checks, read_trial_logs(o.trial_dir).test_stdout):
                out.add(keys[mid][1])
        return out

    def _judge(self, mutants: list[Mutant], source: str, runs: list[TrialOutcome],
               references: list[EndState | None] | None = None, roots: list[str] | None = None) -> VerifierReport:
        by_id = {m.id: m for m in mutants}
        # Each finding with the reason that says it in words; survivors first, then the inconclusive ones.
        survived: list[Finding] = []
        unknown: list[Finding] = []
        killed: list[str] = []
        equivalent: list[str] = []
        notes: list[str] = []
        for i, o in enumerate(runs):
            mid = o.subject or (mutants[i].id if i < len(mutants) else f"mutant {i + 1}")
            m = by_id.get(mid)
            label = m.label if m is not None else mid
            where = f" (logs: {o.trial_dir})" if o.trial_dir else " (no trial dir: the trial never started)"
            result, why = mutant_result(o)
            if result == "inconclusive":
                unknown.append(trial_finding(self.name, FindingKind.INCONCLUSIVE, o, f"{label}: {why}", mid,
                                             text=f"{mid}: inconclusive: {label}: {why}{where}"))
            elif result == "survived":
                differs = end_state_differences(read_end_state(o.trial_dir), references, roots) if references else None
                if differs == []:
                    equivalent.append(mid)
                    notes.append(f"{mid}: equivalent: {label} ends in the same state as the solution on everything the "
                                 "tests can see, so no test could kill it; not counted")
                    continue
                survived.append(trial_finding(self.name, FindingKind.BROKE, o, f"{label} scored {o.reward}, not 0", mid,
                                              text=_survivor(mid, m, label, o, where, differs)))
            else:
                killed.append(mid)
        if not mutants and not runs and source.startswith("no mutants"):
            notes.insert(0, source)
        metrics: dict[str, Any] = {"source": source, "run": len(runs), "killed": len(killed), "survived": len(survived),
                                   "inconclusive": len(unknown), "equivalent": len(equivalent),
                                   "equivalent_mutants": equivalent, "score": mutation_score(len(killed), len(survived))}
        found = survived + unknown
        return VerifierReport(name=self.name, passed=not found, inconclusive=bool(unknown) and not survived,
                              weak=bool(survived), notes=notes, runs=runs, metrics=metrics, findings=found)


def _survivor(mid: str, m: Mutant | None, label: str, o: TrialOutcome, where: str, differs: list[str] | None) -> str:
    """A surviving mutant, in the words the Modifier needs: which near miss, what it changed, what the tests said."""
    fix = ("strengthen the tests of that step, or draw its fixtures so that this mistake changes the checked output"
           if m is not None and m.kind in ("wrong", "model") else
           "the tests must check what that step produces" if m is not None and m.kind == "skip" else
           "the tests must check what the rest of solve.sh does")
    text = f"{mid}: survived: {label} scored {o.reward}, not 0: the tests cannot tell it from the solution; {fix}{where}"
    if differs:
        more = f" and {len(differs) - _DIFFERS_SHOWN} more" if len(differs) > _DIFFERS_SHOWN else ""
        text += f"\n  its end state differs from the solution's at: {', '.join(differs[:_DIFFERS_SHOWN])}{more}"
    if m is not None and m.diff:
        text += "\n  diff:\n" + "\n".join(f"  | {ln}" for ln in m.diff.splitlines())
    _, solve_exit = solution_run(o.trial_dir)
    if solve_exit:
        text += f"\n  (the mutant's solve.sh exited {solve_exit})"
    return text + "\n" + quote(read_trial_logs(o.trial_dir).test_stdout, 6)


def survivors(report: VerifierReport) -> list[str]:
    """The mutants that survived, from a mutation report's findings (not its inconclusive ones)."""
    return [f.exploit for f in report.findings if f.kind is FindingKind.BROKE and f.exploit is not None]
