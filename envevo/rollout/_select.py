"""The paper's seed filter: keep tasks that are hard for an agent (few passes, many turns) and sound (oracle and
invalid-test pass); the kept tasks are copied to `OUT/tasks/`, the decision per task to `OUT/selection.json`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo.errors import UserError
from envevo.rollout._run import dir_targets
from envevo.rollout._stats import RolloutSummary, summarize
from envevo.runtime import DEFAULT_ENGINE
from envevo.task import expand_task_dirs

if TYPE_CHECKING:
    from envevo.llm import LLMRuntime


def parse_fraction(text: str) -> float:
    """'4/8' or '0.5' as a number; a UserError naming --max-pass otherwise."""
    try:
        a, b = text.split("/") if "/" in text else (text, "1")
        value = float(a) / float(b)
    except (ValueError, ZeroDivisionError):
        raise UserError(f"--max-pass {text!r} is not a fraction like 4/8") from None
    return value


def rollout_reasons(summary: RolloutSummary, max_pass: float, min_turns: float) -> list[str]:
    """Why a task's rollouts rule it out as a seed (empty: it is hard enough)."""
    if summary.n == 0 or summary.pass_rate is None:
        return ["no rollouts recorded; run `envevo rollout TASK --run RUN` first"]
    reasons = []
    if summary.pass_rate > max_pass + 1e-9:
        reasons.append(f"too easy: passed {summary.label} > {max_pass:.3g}")
    turns = summary.mean_turns
    if turns is None:
        reasons.append("the agent reported no turn counts")
    elif turns < min_turns:
        reasons.append(f"too short: {turns:.1f} mean turns < {min_turns:g}")
    return reasons


async def select_seeds(tasks: list[Path], rollouts_run: Path, out_dir: Path, *, max_pass: str = "4/8", min_turns: float = 30,
                 agent: str | None = None, verify: bool = True, env: str = DEFAULT_ENGINE, concurrency: int = 3,
                 red_team: str | None = None, mutation: str | None = None, model: LLMRuntime | None = None,
                 model_mutants: int = 0, notify: Callable[[str], None] | None = None,
                 verifiers: list | None = None, runnable: Callable[[Path], Path] | None = None) -> dict[str, Any]:
    """Select seeds among `tasks` by the rollouts stored in `rollouts_run`; returns the selection.json document.

    `verify` checks the survivors with the verifiers `evolve` gates a seed with (red team and mutation default to
    evolve's), so a selected seed does not then end its lineage at the seed gate; `model` is the command's model, lent
    to the red team's hacker and (`model_mutants` per task) to the writer of near misses. `verifiers` (built by the
    caller from its verification config) replace those; `runnable` gives the dir a task's trials run from (a copy
    with its base images rewritten). Async because verifying runs
    trials: the caller owns the one event loop of its command (Harbor keeps loop-bound locks)."""
    from envevo.store import LineageStore

    limit = parse_fraction(max_pass)
    targets = dir_targets(expand_task_dirs(tasks))
    with LineageStore.open(rollouts_run, create=False) as store:
        rows = {t.task_hash: store.rollouts(t.task_hash) for t in targets}
    agents = sorted({(r.agent, r.model) for rs in rows.values() for r in rs if agent is None or r.agent == agent})
    if len(agents) > 1:
        several = ", ".join(f"{a}/{m}" for a, m in agents)
        raise UserError(f"{rollouts_run} holds rollouts of several agents ({several}); pick one with --by-agent")
    results: list[dict[str, Any]] = []
    for t in targets:
        s = summarize(t.name, [r for r in rows[t.task_hash] if (r.agent, r.model) in agents], task_hash=t.task_hash,
                      agent=agents[0][0] if agents else (agent or "-"), model=agents[0][1] if agents else None,
                      simulated=any(r.simulated for r in rows[t.task_hash]))
        results.append({"task": t.name, "path": str(t.task_dir), "summary": s, "reasons": rollout_reasons(s, limit, min_turns)})
    if verify and (survivors := [r for r in results if not r["reasons"]]):
        from envevo.evolve import EvolveConfig
        from envevo.llm import verifiers_with_model
        from envevo.sandbox import preflight
        from envevo.verify import mutation_strict, verify_tasks

        gate = EvolveConfig()
        if verifiers is None:
            verifiers = verifiers_with_model(gate.repeats, red_team=red_team or gate.red_team,
                                             mutation=mutation or gate.mutation, runtime=model, written=model_mutants)
        preflight(env, notify)
        jobs = (out_dir / "_verify").resolve()
        where = runnable or (lambda task_dir: task_dir)
        verdicts = await verify_tasks([(r["task"].replace("/", "__"), where(Path(r["path"]))) for r in survivors], jobs,
                                      env=env, verifiers=verifiers, concurrency=concurrency,
                                      strict=mutation_strict(mutation or gate.mutation))
        for r, v in zip(survivors, verdicts, strict=True):  # a weak seed passes, as `evolve`'s seed gate accepts it
            rejected = v.status not in ("ok", "weak")
            r["reasons"] += [f"verifier: {x}" for x in v.reasons] if rejected else []
            # which verifiers' findings rejected it, by name (the reasons are their words)
            r["rejected_by"] = sorted({f.source for rep in v.reports.values() for _, f in rep.stated()}) if rejected \
                else []
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tasks").mkdir(exist_ok=True)
    for r in results:
        if not r["reasons"]:
            dest = out_dir / "tasks" / Path(r["path"]).name
            if not dest.exists():
                shutil.copytree(r["path"], dest, symlinks=True)
    doc = {"max_pass": max_pass, "min_turns": min_turns, "verified": verify, "rollouts": str(rollouts_run),
           "selected": [r["path"] for r in results if not r["reasons"]],
           "tasks": [{"task": r["task"], "path": r["path"], "selected": not r["reasons"], "reasons": r["reasons"],
                      "rejected_by": r.get("rejected_by", []),
                      **r["summary"].model_dump(include={"agent", "model", "simulated", "n", "passes", "pass_rate", "mean_turns"})}
                     for r in results]}
    (out_dir / "selection.json").write_text(json.dumps(doc, indent=2))
    return doc
