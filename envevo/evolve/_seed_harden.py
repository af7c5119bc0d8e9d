"""The seed gate's way forward for a seed only the red team failed (most public tasks: their tests run in the agent's
container): harden it (`envevo.harden`) and let the lineage start from the proved, hardened copy."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from envevo.evolve._events import Event, Stage
from envevo.harden import harden_task
from envevo.task import ImageMap, Task, load_task
from envevo.verify import Verdict, spec_of

if TYPE_CHECKING:
    from envevo.evolve._seed_start import SeedStart


def only_hardenable(verdict: Verdict) -> bool:
    """Only verifiers whose findings harden fixes (the red team's hacks) failed the seed, and every other gating
    verifier passed it (the rubric does not gate)."""
    failing = [k for k, r in verdict.reports.items() if k != "rubric" and not r.passed]
    return bool(failing) and all((spec := spec_of(k)) is not None and spec.hardenable for k in failing)


async def harden_seed(start: SeedStart, name: str, task: Task, verdict: Verdict, sound: bool,
                      why: str) -> tuple[Task, bool, str]:
    """(task, sound, why) after the seed gate. A seed only the red team failed, with `harden` on: the hardened copy,
    sound, when harden proves it (generation 0 is then that copy, its provenance in ``[metadata.envevo.hardened]``),
    else the seed as it was, rejected, with harden's reason added. Any other seed: as the gate left it."""
    if sound or not start.config.harden or not only_hardenable(verdict):
        return task, sound, why
    workdir = start.store.run_dir / "work" / "seeds" / name / "harden"
    start.on_event(Event(name, 0, Stage.CANDIDATE, "only the red team failed the seed: hardening it"))
    result = await harden_task(task, workdir / "out", env=start.config.env, jobs_dir=workdir / "trials",
                               repeats=start.config.repeats, concurrency=start.config.trial_concurrency,
                               overwrite=True, gate=start.gate, before=verdict, verifiers=start.verifiers,
                               dest_name="seed", image_map=ImageMap(images=start.config.image_map))
    workdir.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread((workdir / "harden.json").write_text, result.model_dump_json(indent=1))
    if result.status != "hardened" or result.out is None:
        said = (result.reason.strip().splitlines() or [""])[0]  # the lineage's reason stays one line; harden.json has all
        return task, False, f"{why}; harden could not fix it ({result.status}: {said}; --no-harden skips this)"
    arts = ", ".join(a.path for a in result.artifacts) or "none"
    start.on_event(Event(name, 0, Stage.CANDIDATE, f"the seed was hardened and proved (tests in a separate verifier, "
                                                   f"artifacts: {arts}); generation 0 is the hardened copy"))
    return load_task(result.out), True, ""
