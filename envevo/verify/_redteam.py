"""The red team: exploit agents, each a known class of reward hack, must all score 0 on a task.

Trial exploits run as `envevo.runtime._scripted_agent:ScriptedAgent` trials in the same bounded pool as the
oracle and invalid-test trials; static exploits (peeking) read the task's files and need no trial. A task passes
only when every exploit scores 0; a failure names the exploit and quotes its evidence: what it planted, the reward
it got and the trial dir.

- reward above 0 → the exploit broke the task (fail);
- reward 0, no reward, or a verifier error after the tests ran → the exploit was resisted (the tests were not fooled);
- the trial never reached the tests (a build or infrastructure failure, an agent timeout, a verifier error with no
  test output) → inconclusive, never a pass: a verifier that never ran says nothing about the exploit.

A candidate evolved from a parent `inherit`s the parent's certified resisted verdicts (envevo/verify/_exploit_keys.py):
an exploit of a mechanism class whose key equals one of them is not run; the report names the trial it came from.
A static finding that already fails the task makes every trial exploit moot: they are skipped, with that reason.

Agent exploits (the LLM hacker) act in a sandbox of their own beside the pool (`attack_task`, holding the same
gate) and replay their hack as a trial: judged the same way. Without a model they are skipped, and the report
says why (a reason on a passing report).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from envevo.runtime import ErrorKind, TrialOutcome, TrialSpec
from envevo.task import Task, load_task
from envevo.verify._evidence import quote, read_trial_logs
from envevo.verify._exploit_keys import Source, exploit_key, missing_witness, parse_sources
from envevo.verify._false_fail import judge_probes, script_lines
from envevo.verify._plugins import RED_TEAM, VerifierSpec, spec_of
from envevo.verify._verdict import Finding, FindingKind, VerifierReport, evidence_line, trial_finding
from envevo.verify.exploits import SCRIPTED_AGENT, AgentAttack, exploit_names, get_exploit, make_exploit

# Trials that end so never reached the tests, whatever the exploit did.
if TYPE_CHECKING:
    from envevo.verify._config import VerificationConfig

_NEVER_RAN = (ErrorKind.ENVIRONMENT_BUILD_FAILURE, ErrorKind.INFRASTRUCTURE_ERROR, ErrorKind.AGENT_TIMEOUT)


class ExploitResult(StrEnum):
    """What one exploit trial says about the task."""

    BROKEN = "broken"  # reward above 0 without solving it
    RESISTED = "resisted"  # the tests ran and were not fooled
    INCONCLUSIVE = "inconclusive"  # the trial never reached the tests


def exploit_result(o: TrialOutcome) -> tuple[ExploitResult, str]:
    """The result of one exploit trial, and for an inconclusive one why (without the trial dir)."""
    if o.error_kind in _NEVER_RAN:
        return ExploitResult.INCONCLUSIVE, (f"the exploit never ran to the tests: {o.error_kind.value}: "
                                            f"{o.error_message or '(no message)'}")
    if o.reward is not None and o.reward > 0:
        return ExploitResult.BROKEN, ""
    if o.error_kind is ErrorKind.VERIFIER_ERROR and not read_trial_logs(o.trial_dir).test_stdout.strip():
        return ExploitResult.INCONCLUSIVE, (f"the verifier failed before any test ran: {o.error_kind.value}: "
                                            f"{o.error_message or '(no message)'}")
    return ExploitResult.RESISTED, ""


def parse_red_team(value: str) -> tuple[bool, int | None]:
    return _spec().parse(value)


def _spec() -> VerifierSpec:
    spec = spec_of(RED_TEAM)
    assert spec is not None  # built in
    return spec


def choose_exploits(task: Task, names: list[str], sample: int | None) -> list[str]:
    """The exploits to run on a task: all, or a deterministic sample of N (by task content and exploit name)."""
    if sample is None or sample >= len(names):
        return list(names)
    key = task.content_hash()
    ranked = sorted(names, key=lambda n: hashlib.sha256(f"{key}:{n}".encode()).hexdigest())
    chosen = set(ranked[:sample])
    return [n for n in names if n in chosen]


@dataclass
class _Reuse:
    """What reuse decided for one task dir's trials (`trial_specs`), read by `judge_task`."""

    inherited: dict[str, Source] = field(default_factory=dict)  # the parent's certified resisted keys
    keys: dict[str, tuple[str, bool]] = field(default_factory=dict)  # exploit run → (key, needs a witness)
    reused: dict[str, tuple[str, Source]] = field(default_factory=dict)  # exploit not run → (key, its source)
    moot: list[str] = field(default_factory=list)  # trial exploits skipped: a static finding already fails the task
    moot_by: str = ""  # the static exploit that did


def reuse_default() -> bool:
    """Reuse is on unless ENVEVO_RED_TEAM_REUSE=off (benchmarks/evolve_throughput.py measures both in one run)."""
    return os.environ.get("ENVEVO_RED_TEAM_REUSE", "on").strip().lower() != "off"


class RedTeamVerifier:
    """Every chosen exploit scores 0 (trial exploits in the sandbox, static ones on the files)."""

    name = RED_TEAM

    @classmethod
    def from_config(cls, config: VerificationConfig, *, sample: int | None, model: object | None = None,
                    mutant_writer: object | None = None) -> RedTeamVerifier:
        return cls(sample=sample, model=model, learn_rubric=config.learn_rubric, probes=config.probes)

    def __init__(self, exploits: list[str] | None = None, sample: int | None = None, timeout_sec: int = 300, *,
                 model: object | None = None, learn_rubric: Path | None = None, probes: bool = True,
                 reuse: bool | None = None):
        """`probes`: run the false-fail probes (a task-quality rate beside the verdict, never a finding) when every
        exploit runs; `evolve` turns them off, as they cost trials per candidate and gate nothing.
        `model`: the run's model for agent exploits (an `envevo.llm.LLMRuntime`, so their calls are metered, recorded
        and budgeted with the run's; passed through untyped, as llm sits above verify). Without one they read
        ./envevo.toml. `learn_rubric`: a rubric file a successful hack's criterion is appended to; without it
        the criterion is only proposed in the report. `reuse`: take an inherited resisted verdict on the same inputs
        instead of a trial (default: on, `reuse_default`)."""
        self.exploits = list(exploits) if exploits is not None else exploit_names()
        for n in self.exploits:
            get_exploit(n)  # unknown names fail here, before any container starts
        self.sample = sample
        self.probes = probes
        self.timeout_sec = timeout_sec
        self._agent_options = {k: v for k, v in (("runtime", model), ("learn_rubric", learn_rubric)) if v is not None}
        self._plans: dict[Path, list[tuple[str, str | None]]] = {}  # task dir → [(exploit, script or None)]
        self._tasks: dict[Path, Task] = {}
        self._attacks: dict[Path, list[AgentAttack]] = {}  # task dir → what its agent exploits did
        self.reuse = reuse_default() if reuse is None else reuse
        self._reuse: dict[Path, _Reuse] = {}

    def _reuse_of(self, task_dir: Path) -> _Reuse:
        return self._reuse.setdefault(Path(task_dir).resolve(), _Reuse())

    def inherit(self, task_dir: Path, keys: frozenset[str]) -> None:
        """The parent's keys (the recorder's `mutant_kills`: its resisted verdicts among them, with their trials),
        for the candidate at `task_dir`: its exploits with one of them are not run."""
        self._reuse_of(task_dir).inherited = parse_sources(keys) if self.reuse else {}

    def _task(self, task_dir: Path) -> Task:
        key = Path(task_dir).resolve()
        if key not in self._tasks:
            self._tasks[key] = load_task(key)
        return self._tasks[key]

    def plan(self, task_dir: Path, fresh: bool = False) -> list[tuple[str, str | None]]:
        """(exploit, script) per chosen exploit (script None: a static exploit, or nothing to try), in registry order.

        `fresh` re-reads the task: a candidate dir may be edited between verifications (the Modifier's loop), and the
        judge must see the plan its trials ran."""
        key = Path(task_dir).resolve()
        if fresh or key not in self._plans:
            self._tasks.pop(key, None)
            task = self._task(key)
            # Agent exploits are outside the sample (which stays what it was before they existed): they run
            # whenever a model is configured, on their own command budget.
            # The false-fail probes (no exploits: a rate beside the verdict) run only when every exploit does.
            scripted = [n for n in self.exploits if get_exploit(n).kind in ("trial", "static")]
            agents = [n for n in self.exploits if get_exploit(n).kind == "agent"]
            probes = [n for n in self.exploits if get_exploit(n).kind == "probe" and self.sample is None and self.probes]
            chosen = choose_exploits(task, scripted, self.sample) + probes + agents
            self._plans[key] = [(n, get_exploit(n).script(task)) for n in chosen]
        return self._plans[key]

    async def attack_task(self, task_dir: Path, env: str, trials_dir: Path, gate: asyncio.Semaphore) -> None:
        """Run the planned agent exploits on a task (each holds `gate` while its sandbox runs); `judge_task` reads
        what they did."""
        key = Path(task_dir).resolve()
        if not Path(task_dir, "task.toml").exists():
            return
        agents = [make_exploit(n, **self._agent_options) if self._agent_options else get_exploit(n)
                  for n, _ in self.plan(task_dir) if get_exploit(n).kind == "agent"]
        task = self._task(key)
        self._attacks[key] = list(await asyncio.gather(
            *(a.attack(task, key, env, Path(trials_dir), gate) for a in agents)))  # type: ignore[attr-defined]

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        if not Path(task_dir, "task.toml").exists() and not Path(task_dir, "instruction.md").exists():
            return []  # a placeholder dir (the CLI counts trials with Path('.')): nothing to plan
        specs = []
        plan = self.plan(task_dir, fresh=True)
        state = self._reuse_of(task_dir)
        state.keys, state.reused, state.moot, state.moot_by = {}, {}, [], ""
        if moot := self._static_findings(task_dir):  # the task fails already: no trial can change that
            state.moot_by = moot[0].exploit or "a static exploit"
            state.moot = [n for n, s in plan if s is not None and get_exploit(n).kind == "trial"]
        task = self._task(task_dir)
        for name, script in plan:
            if script is None or name in state.moot:
                continue
            if (key := exploit_key(task, name, script, env)) is not None:  # kept with reuse off too: a source later
                if self.reuse and (source := state.inherited.get(key[0])) is not None:
                    state.reused[name] = (key[0], source)  # the parent resisted it on the same inputs: no container
                    continue
                state.keys[name] = key
            trial = f"{Path(task_dir).name[:32]}__rt-{name}__{uuid.uuid4().hex[:6]}"
            specs.append(TrialSpec(task_dir=task_dir, agent=SCRIPTED_AGENT, env=env, trials_dir=trials_dir, trial_name=trial,
                                   subject=name, agent_kwargs={"script": script, "label": name, "timeout_sec": self.timeout_sec}))
        return specs

    def count_trials(self, task_dir: Path) -> int:
        if self._static_findings(task_dir):  # trial exploits are moot (`trial_specs`); probes still run
            return sum(s is not None and get_exploit(n).kind != "trial" for n, s in self.plan(task_dir))
        return sum(script is not None for _, script in self.plan(task_dir))

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        """Trial exploits only (the static ones need the task: `judge_task`)."""
        return self._judge(None, runs)

    def judge_task(self, task_dir: Path, runs: list[TrialOutcome]) -> VerifierReport:
        report = self._judge(task_dir, runs)
        state = self._reuse_of(task_dir)
        for name in state.moot:
            report.notes.append(f"{name}: skipped: moot, the static finding of {state.moot_by} already fails the task")
        for name, (digest, src) in state.reused.items():
            report.notes.append(f"{name}: resisted, reused from generation {src.generation} trial {src.trial} "
                                f"(inputs byte-identical, key {digest[:12]}), not run again")
        resisted: list[dict[str, object]] = [{"exploit": n, "key": k, "generation": s.generation, "trial": s.trial}
                                             for n, (k, s) in state.reused.items()]
        for o in runs:
            if (o.subject is None or o.trial_dir is None or (key := state.keys.get(o.subject)) is None
                    or exploit_result(o)[0] is not ExploitResult.RESISTED):
                continue
            witness = missing_witness(read_trial_logs(o.trial_dir).test_stdout) if key[1] else ""
            if witness is not None:  # a generated runner's key certifies only with a check failed on a missing file
                resisted.append({"exploit": o.subject, "key": key[0], "generation": None, "trial": o.trial_dir.name,
                                 **({"witness": witness} if witness else {})})
        report.metrics.update({"trials_run": len(runs), "trials_reused": len(state.reused),
                               "trials_moot": len(state.moot), "resisted_keys": resisted})
        return report

    def _judge(self, task_dir: Path | None, runs: list[TrialOutcome]) -> VerifierReport:
        # Each finding with the reason that says it in words; broken ones first, then the inconclusive ones.
        broken: list[Finding] = []
        unknown: list[Finding] = []
        trial_names: list[str] = []
        probes: list[tuple[str, TrialOutcome, str | None]] = []
        if task_dir is not None:
            broken += self._static_findings(task_dir)
            state = self._reuse_of(task_dir)
            trial_names = [n for n, s in self.plan(task_dir)
                           if s is not None and n not in state.reused and n not in state.moot]
        for i, o in enumerate(runs):
            name = o.subject or (trial_names[i] if i < len(trial_names) else f"exploit {i + 1}")
            where = f" (logs: {o.trial_dir})" if o.trial_dir else " (no trial dir: the trial never started)"
            result, why = exploit_result(o)
            if name in exploit_names() and get_exploit(name).kind == "probe":
                probes.append((name, o, why if result is ExploitResult.INCONCLUSIVE else None))
            elif result is ExploitResult.INCONCLUSIVE:
                unknown.append(trial_finding(self.name, FindingKind.INCONCLUSIVE, o, why, name,
                                             text=f"{name}: inconclusive: {why}{where}"))
            elif result is ExploitResult.BROKEN:
                planted = _planted(o)
                logs = read_trial_logs(o.trial_dir)
                said = f"reward {o.reward} without solving the task"
                broken.append(trial_finding(self.name, FindingKind.BROKE, o, said, name,
                               text=f"{name}: {said}{where}\n"
                               f"  {get_exploit(name).description if name in exploit_names() else ''}\n"
                               + (("  planted:\n" + "\n".join(f"  | {p}" for p in planted[:12])
                                   + (f"\n  | … and {len(planted) - 12} more" if len(planted) > 12 else "") + "\n")
                                  if planted else "")
                               + self._lenient(task_dir, name)
                               + quote(logs.test_stdout, 6)))
        skipped: list[Finding] = []
        attacks = self._attacks.get(Path(task_dir).resolve(), []) if task_dir is not None else []
        for attack in attacks:
            _judge_attack(self.name, attack, broken, unknown, skipped)
        runs = runs + [a.outcome for a in attacks if a.outcome is not None]  # the replayed hacks, as evidence
        found = broken + unknown
        # What each agent exploit tried is said whatever came of it: "resisted" and "never ran" must not look alike.
        tried = [_tried_note(a) for a in attacks if not a.skipped]
        probe_notes, metrics = judge_probes(probes)
        return VerifierReport(name=self.name, passed=not found, inconclusive=bool(unknown) and not broken,
                              notes=[_skip_note(f) for f in skipped] + tried + probe_notes, metrics=metrics,
                              runs=runs, findings=found + skipped)

    def _lenient(self, task_dir: Path | None, name: str) -> str:
        """For a grader-logic exploit, the test lines that let it through: the tests to tighten."""
        exploit = get_exploit(name) if name in exploit_names() else None
        checks = getattr(exploit, "lenient_checks", None)
        found = checks(self._task(task_dir)) if checks is not None and task_dir is not None else []
        return ("  the tests to tighten:\n" + "\n".join(f"  | {c}" for c in found[:6]) + "\n") if found else ""

    def _static_findings(self, task_dir: Path) -> list[Finding]:
        """What the planned static exploits found in the task's files (no trial)."""
        task = self._task(task_dir)
        out = []
        for name, _ in self.plan(task_dir):
            exploit = get_exploit(name)
            if exploit.kind == "static" and (found := exploit.inspect(task)):
                more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
                out.append(Finding(source=self.name, kind=FindingKind.BROKE, exploit=name,
                                   evidence=evidence_line(found[0]) + more,
                                   text=f"{name}: {exploit.description}; found:\n" + "\n".join(f"  | {f}" for f in found)))
        return out


def _skip_note(f: Finding) -> str:
    return f.text


def _tried_note(a: AgentAttack) -> str:
    """One line: the commands an agent exploit ran while looking, and what came of it."""
    o = a.outcome
    if a.error:
        came = "gave no usable hack"
    elif o is None:
        came = f"found nothing to replay ({a.summary or 'no hack'})"
    else:
        came = f"its hack replayed as a trial: reward {o.reward if o.reward is not None else o.error_kind.value}"
    shown = "; ".join(" ".join(c.split())[:80] for c in a.commands[:8]) + (" …" if len(a.commands) > 8 else "")
    spent = f" ({a.model_calls} model call(s), {a.input_tokens}+{a.output_tokens} tokens)" if a.model_calls else ""
    return f"{a.exploit}: ran {len(a.commands)} command(s){': ' + shown if shown else ''}; {came}{spent}"


def _judge_attack(source: str, a: AgentAttack, broken: list[Finding], unknown: list[Finding],
                  skipped: list[Finding]) -> None:
    if a.skipped:
        skipped.append(Finding(source=source, kind=FindingKind.SKIPPED, exploit=a.exploit, evidence=a.skipped,
                               text=f"{a.exploit}: skipped: {a.skipped}"))
        return
    o = a.outcome
    where = f" (logs: {o.trial_dir})" if o is not None and o.trial_dir else ""
    if a.error:
        unknown.append(Finding(source=source, kind=FindingKind.INCONCLUSIVE, exploit=a.exploit,
                               evidence=evidence_line(a.error), text=f"{a.exploit}: inconclusive: {a.error}"))
    elif o is None:
        return  # the agent found nothing worth replaying: resisted
    elif (result := exploit_result(o))[0] is ExploitResult.INCONCLUSIVE:
        why = result[1].replace("the exploit", "its hack", 1)
        unknown.append(trial_finding(source, FindingKind.INCONCLUSIVE, o, why, a.exploit,
                                     text=f"{a.exploit}: inconclusive: {why}{where}"))
    elif result[0] is ExploitResult.BROKEN:
        planted = _planted(o)
        said = f"reward {o.reward} without solving the task"
        broken.append(trial_finding(source, FindingKind.BROKE, o, f"{said}; hack: {a.summary}", a.exploit,
                       text=f"{a.exploit}: {said}{where}\n  hack: {a.summary}\n"
                       + (f"  rubric criterion: {a.criterion}\n" if a.criterion else "")
                       + ("  planted:\n" + "\n".join(f"  | {p}" for p in planted[:12]) + "\n" if planted else "")
                       + quote(read_trial_logs(o.trial_dir).test_stdout, 6)))


def _planted(o: TrialOutcome) -> list[str]:
    return script_lines(o, "planted ")


def broken_by(report: VerifierReport) -> list[str]:
    """The exploits that broke the task, from a red-team report's findings (not its inconclusive ones)."""
    return [f.exploit for f in report.findings if f.kind is FindingKind.BROKE and f.exploit is not None]
