"""The red team: exploit agents, each a known class of reward hack, must all score 0 on a task.

Trial exploits run as `envevo.runtime._scripted_agent:ScriptedAgent` trials in the same bounded pool as the
oracle and invalid-test trials; static exploits (peeking) read the task's files and need no trial. A task passes
only when every exploit scores 0; a failure names the exploit and quotes its evidence: what it planted, the reward
it got and the trial dir.

- reward above 0 → the exploit broke the task (fail);
- reward 0, no reward, or a verifier error after the tests ran → the exploit was resisted (the tests were not fooled);
- the trial never reached the tests (a build or infrastructure failure, an agent timeout, a verifier error with no
  test output) → inconclusive, never a pass: a verifier that never ran says nothing about the exploit.

Agent exploits (the LLM hacker) act in a sandbox of their own beside the pool (`attack_task`, holding the same
gate) and replay their hack as a trial: judged the same way. Without a model they are skipped, and the report
says why (a reason on a passing report).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from enum import StrEnum
from pathlib import Path

from envevo.runtime import ErrorKind, TrialOutcome, TrialSpec
from envevo.task import Task, load_task
from envevo.verify._evidence import quote, read_trial_logs
from envevo.verify._verdict import VerifierReport
from envevo.verify.exploits import SCRIPTED_AGENT, AgentAttack, exploit_names, get_exploit

_TRIAL = re.compile(r"__rt-([a-z0-9_]+)__")
# Trials that end so never reached the tests, whatever the exploit did.
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


def parse_switch(option: str, value: str) -> tuple[bool, int | None]:
    """An on/off/sample:N verifier switch (`--red-team`, `--mutation`): 'on' → (True, None), 'off' → (False, None),
    'sample:N' → (True, N); ValueError naming `option` otherwise."""
    v = (value or "off").strip().lower()
    if v == "off":
        return False, None
    if v == "on":
        return True, None
    if v.startswith("sample:"):
        try:
            n = int(v.split(":", 1)[1])
        except ValueError:
            n = 0
        if n >= 1:
            return True, n
    raise ValueError(f"{option} {value!r}: use on, off or sample:N (N ≥ 1)")


def parse_red_team(value: str) -> tuple[bool, int | None]:
    return parse_switch("--red-team", value)


def choose_exploits(task: Task, names: list[str], sample: int | None) -> list[str]:
    """The exploits to run on a task: all, or a deterministic sample of N (by task content and exploit name)."""
    if sample is None or sample >= len(names):
        return list(names)
    key = task.content_hash()
    ranked = sorted(names, key=lambda n: hashlib.sha256(f"{key}:{n}".encode()).hexdigest())
    chosen = set(ranked[:sample])
    return [n for n in names if n in chosen]


class RedTeamVerifier:
    """Every chosen exploit scores 0 (trial exploits in the sandbox, static ones on the files)."""

    name = "red_team"

    def __init__(self, exploits: list[str] | None = None, sample: int | None = None, timeout_sec: int = 300):
        self.exploits = list(exploits) if exploits is not None else exploit_names()
        for n in self.exploits:
            get_exploit(n)  # unknown names fail here, before any container starts
        self.sample = sample
        self.timeout_sec = timeout_sec
        self._plans: dict[Path, list[tuple[str, str | None]]] = {}  # task dir → [(exploit, script or None)]
        self._tasks: dict[Path, Task] = {}
        self._attacks: dict[Path, list[AgentAttack]] = {}  # task dir → what its agent exploits did

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
            scripted = [n for n in self.exploits if get_exploit(n).kind != "agent"]
            agents = [n for n in self.exploits if get_exploit(n).kind == "agent"]
            chosen = choose_exploits(task, scripted, self.sample) + agents
            self._plans[key] = [(n, get_exploit(n).script(task)) for n in chosen]
        return self._plans[key]

    async def attack_task(self, task_dir: Path, env: str, trials_dir: Path, gate: asyncio.Semaphore) -> None:
        """Run the planned agent exploits on a task (each holds `gate` while its sandbox runs); `judge_task` reads
        what they did."""
        key = Path(task_dir).resolve()
        if not Path(task_dir, "task.toml").exists():
            return
        agents = [get_exploit(n) for n, _ in self.plan(task_dir) if get_exploit(n).kind == "agent"]
        task = self._task(key)
        self._attacks[key] = list(await asyncio.gather(
            *(a.attack(task, key, env, Path(trials_dir), gate) for a in agents)))  # type: ignore[attr-defined]

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        if not Path(task_dir, "task.toml").exists() and not Path(task_dir, "instruction.md").exists():
            return []  # a placeholder dir (the CLI counts trials with Path('.')): nothing to plan
        specs = []
        for name, script in self.plan(task_dir, fresh=True):
            if script is None:
                continue
            trial = f"{Path(task_dir).name[:32]}__rt-{name}__{uuid.uuid4().hex[:6]}"
            specs.append(TrialSpec(task_dir=task_dir, agent=SCRIPTED_AGENT, env=env, trials_dir=trials_dir, trial_name=trial,
                                   agent_kwargs={"script": script, "label": name, "timeout_sec": self.timeout_sec}))
        return specs

    def count_trials(self, task_dir: Path) -> int:
        return sum(script is not None for _, script in self.plan(task_dir))

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        """Trial exploits only (the static ones need the task: `judge_task`)."""
        return self._judge(None, runs)

    def judge_task(self, task_dir: Path, runs: list[TrialOutcome]) -> VerifierReport:
        return self._judge(task_dir, runs)

    def _judge(self, task_dir: Path | None, runs: list[TrialOutcome]) -> VerifierReport:
        broken: list[str] = []
        unknown: list[str] = []
        tried: list[str] = []
        if task_dir is not None:
            task = self._task(task_dir)
            plan = self.plan(task_dir)
            for name, _ in plan:
                exploit = get_exploit(name)
                if exploit.kind == "static":
                    tried.append(name)
                    if findings := exploit.inspect(task):
                        broken.append(f"{name}: {exploit.description}; found:\n" + "\n".join(f"  | {f}" for f in findings))
            trial_names = [n for n, s in plan if s is not None]
        else:
            trial_names = []
        for i, o in enumerate(runs):
            m = _TRIAL.search(o.trial_dir.name) if o.trial_dir else None
            name = m.group(1) if m else (trial_names[i] if i < len(trial_names) else f"exploit {i + 1}")
            tried.append(name)
            where = f" (logs: {o.trial_dir})" if o.trial_dir else " (no trial dir: the trial never started)"
            result, why = exploit_result(o)
            if result is ExploitResult.INCONCLUSIVE:
                unknown.append(f"{name}: inconclusive: {why}{where}")
                continue
            if result is ExploitResult.BROKEN:
                planted = _planted(o)
                logs = read_trial_logs(o.trial_dir)
                broken.append(f"{name}: reward {o.reward} without solving the task{where}\n"
                              f"  {get_exploit(name).description if name in exploit_names() else ''}\n"
                              + (("  planted:\n" + "\n".join(f"  | {p}" for p in planted[:12])
                                  + (f"\n  | … and {len(planted) - 12} more" if len(planted) > 12 else "") + "\n")
                                 if planted else "")
                              + quote(logs.test_stdout, 6))
        skipped: list[str] = []
        attacks = self._attacks.get(Path(task_dir).resolve(), []) if task_dir is not None else []
        for attack in attacks:
            _judge_attack(attack, tried, broken, unknown, skipped)
        runs = runs + [a.outcome for a in attacks if a.outcome is not None]  # the replayed hacks, as evidence
        passed = not broken and not unknown
        reasons = broken + unknown
        if passed and tried:
            reasons = []
        return VerifierReport(name=self.name, passed=passed, inconclusive=bool(unknown) and not broken,
                              reasons=reasons, notes=skipped, runs=runs)


def _judge_attack(a: AgentAttack, tried: list[str], broken: list[str], unknown: list[str], skipped: list[str]) -> None:
    if a.skipped:
        skipped.append(f"{a.exploit}: skipped: {a.skipped}")
        return
    tried.append(a.exploit)
    o = a.outcome
    where = f" (logs: {o.trial_dir})" if o is not None and o.trial_dir else ""
    if a.error:
        unknown.append(f"{a.exploit}: inconclusive: {a.error}")
    elif o is None:
        return  # the agent found nothing worth replaying: resisted
    elif (result := exploit_result(o))[0] is ExploitResult.INCONCLUSIVE:
        unknown.append(f"{a.exploit}: inconclusive: {result[1].replace('the exploit', 'its hack', 1)}{where}")
    elif result[0] is ExploitResult.BROKEN:
        planted = _planted(o)
        broken.append(f"{a.exploit}: reward {o.reward} without solving the task{where}\n  hack: {a.summary}\n"
                      + (f"  new rubric criterion: {a.criterion}\n" if a.criterion else "")
                      + ("  planted:\n" + "\n".join(f"  | {p}" for p in planted[:12]) + "\n" if planted else "")
                      + quote(read_trial_logs(o.trial_dir).test_stdout, 6))


def _planted(o: TrialOutcome) -> list[str]:
    if not o.trial_dir:
        return []
    log = Path(o.trial_dir) / "agent" / "script.log"
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    return [ln.removeprefix("planted ").strip() for ln in text.splitlines() if ln.startswith("planted ")]


def broken_by(report: VerifierReport) -> list[str]:
    """The exploits named in a red-team report's failures (not its inconclusive ones)."""
    return [r.split(":", 1)[0] for r in report.reasons
            if not r.split(":", 1)[1].lstrip().startswith("inconclusive")]
