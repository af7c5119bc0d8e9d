"""`select_seeds(tasks, config, run_dir=...)`: the seeds to evolve, hard for an agent by its recorded rollouts and
sound by the verifiers that gate a seed in `evolve`; optionally a proved hardened copy of each task only the red
team rejected."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envevo.api._check import Checking
from envevo.api._config import CheckConfig
from envevo.api._host import Notify, quiet
from envevo.errors import UserError
from envevo.verify import spec_of


class SeedSelection(BaseModel):
    doc: dict[str, Any]  # selection.json, with each task's `harden` preview (and `hardened`, with harden_dir)
    usage: list[dict[str, Any]] = []
    budget_stop: str | None = None


async def select_seeds(tasks: list[Path], config: CheckConfig | None = None, *, run_dir: Path, out_dir: Path,
                       max_pass: str = "4/8", min_turns: float = 30, agent: str | None = None, verify: bool = True,
                       harden_dir: Path | None = None, notify: Notify = quiet) -> SeedSelection:
    """Select among `tasks` by the rollouts stored in `run_dir` into `out_dir`. Raises UserError for bad input,
    before any container."""
    from envevo.rollout import select_seeds as select

    config = config or CheckConfig()
    sandbox, verification, model = config.sandbox, config.verification, config.model
    unused = [flag for flag, given in (("--model", model.model), ("--base-url", model.base_url),
                                       ("--api-key-env", model.api_key_env), ("--model-mutants",
                                       verification.model_mutants), ("--max-tokens", model.max_tokens)) if given]
    if not verify and unused:
        raise UserError(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} for the verifiers, and --no-verify "
                        "runs none: drop it, or verify")
    if harden_dir is not None and (not verify or verification.red_team == "off"):
        raise UserError("--harden hardens the seeds only the red team rejected: it needs --verify and the red team on")
    if harden_dir is not None:
        from envevo.harden import check_out

        check_out(harden_dir.absolute(), overwrite=False)  # before any container starts
    # only the verifiers start sandboxes (and ask a model) here; select_seeds runs the preflight
    checking = await Checking.open(config, notify, preflight=False) if verify else None
    runnable = _runnable(checking, out_dir / "_verify" / "_tasks") if checking and checking.mapping.images else None
    doc = await select(tasks, run_dir, out_dir, max_pass=max_pass, min_turns=min_turns, agent=agent, verify=verify,
                       env=sandbox.env, concurrency=sandbox.trial_concurrency, red_team=verification.red_team,
                       mutation=verification.mutation, model=checking.runtime if checking else None,
                       model_mutants=verification.model_mutants, notify=notify,
                       verifiers=checking.verifiers if checking else None, runnable=runnable)
    _harden_previews(doc)
    if harden_dir is not None:
        doc["hardened"] = await _harden_rejected(doc, harden_dir, out_dir / "_harden", config, notify)
    if checking is None:
        return SeedSelection(doc=doc)
    return SeedSelection(doc=doc, usage=checking.usage, budget_stop=checking.budget_stop)


def _runnable(checking: Checking, dest: Path) -> Callable[[Path], Path]:
    """The dir a task's trials run from: a copy with its base images rewritten."""
    from envevo.task import load_task

    return lambda task_dir: checking.runnable(load_task(task_dir), dest.resolve())[0]


def _only_hardenable(task: dict[str, Any]) -> bool:
    """Only verifiers whose findings harden fixes (the red team's hacks) rejected the task. The verifiers run only on
    the tasks the rollouts kept, so no rollout reason stands beside theirs."""
    rejected_by = task.get("rejected_by", [])
    return bool(rejected_by) and all((spec := spec_of(name)) is not None and spec.hardenable for name in rejected_by)


def _harden_previews(doc: dict) -> None:
    """Each task's `harden` entry: what `envevo harden` would fix in it, from its files and the red team's verdict."""
    from envevo.harden import preview_harden
    from envevo.task import load_task

    for t in doc["tasks"]:
        broke = ["the red team"] if _only_hardenable(t) else []
        t["harden"] = preview_harden(load_task(Path(t["path"])), broken_by=broke).text


async def _harden_rejected(doc: dict, out: Path, jobs: Path, config: CheckConfig, notify: Notify) -> list[dict]:
    """Harden (and prove) each task that only the red team rejected and that harden would fix, into `out`."""
    from envevo.harden import OutFolder, harden_task, out_name
    from envevo.task import load_task

    picked = [load_task(Path(t["path"])) for t in doc["tasks"]
              if _only_hardenable(t) and t["harden"].startswith("harden would fix")]
    folder = OutFolder(out, [out_name(t) for t in picked], overwrite=False)
    folder.start()
    if not picked:
        return []
    env, concurrency, v = config.sandbox.env, config.sandbox.trial_concurrency, config.verification
    gate = asyncio.Semaphore(concurrency)

    async def one(task) -> dict:
        r = await harden_task(task, folder.out, env=env, jobs_dir=jobs.resolve(), repeats=v.repeats,
                              mutation=v.mutation, concurrency=concurrency, gate=gate, overwrite=True,
                              dest_name=out_name(task))
        folder.add(r)
        notify(f"{task.name}: {r.status}" + (f" → {r.out}" if r.out else f": {r.reason}"))
        return {"task": task.name, "status": r.status, "reason": r.reason, "out": r.out}

    return list(await asyncio.gather(*(one(t) for t in picked)))
