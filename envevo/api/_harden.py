"""`harden(tasks, config, out_dir=...)`: a hardened copy of each task (tests in a separate verifier, artifacts
inferred, test-time downloads at build time), each proved before it is written (docs/trust.md#harden)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from envevo.api._config import CheckConfig
from envevo.api._host import Notify, Progress, no_progress, prepare_host, quiet
from envevo.errors import ExitCode

if TYPE_CHECKING:
    from envevo.harden import HardenResult


@dataclass
class HardenRun:
    results: list[HardenResult]
    jobs: Path  # where the trial logs are

    @property
    def exit_code(self) -> int:
        """0 all hardened or unchanged; 1 some not hardened; 3 some inconclusive."""
        statuses = {r.status for r in self.results}
        if "not hardened" in statuses:
            return int(ExitCode.FAIL)
        return int(ExitCode.INCONCLUSIVE if "inconclusive" in statuses else ExitCode.OK)


async def harden(tasks: list[Path], config: CheckConfig | None = None, *, out_dir: Path, overwrite: bool = False,
                 jobs_dir: Path | None = None, notify: Notify = quiet, progress: Progress = no_progress) -> HardenRun:
    """Harden task dirs (or folders of them) into `out_dir`, one dir per task; `overwrite` replaces only what a
    previous harden wrote there. Uses the config's sandbox (env, trials at once, image map, host variables) and
    its verification's repeats and mutation. Raises UserError for bad input, before any container."""
    from envevo.harden import OutFolder, harden_task, out_name
    from envevo.task import load_task_args

    config = config or CheckConfig()
    sandbox, v = config.sandbox, config.verification
    loaded = load_task_args(tasks)  # every task is validated before any container starts
    names = [out_name(t) for t in loaded]
    folder = OutFolder(out_dir, names, overwrite)
    mapping, _ = prepare_host(sandbox, config.scale, notify)
    jobs = (jobs_dir or Path("jobs") / f"harden-{datetime.now():%Y%m%d-%H%M%S}").resolve()
    jobs.mkdir(parents=True, exist_ok=True)
    gate = asyncio.Semaphore(sandbox.trial_concurrency)
    folder.start()  # the marker first, then after each task: a run cut short may be --overwrite-n

    with progress(f"hardening {len(loaded)} task(s)", len(loaded)) as advance:
        async def one(task, name) -> HardenResult:
            r = await harden_task(task, folder.out, env=sandbox.env, jobs_dir=jobs, repeats=v.repeats,
                                  mutation=v.mutation, concurrency=sandbox.trial_concurrency, image_map=mapping,
                                  overwrite=True, gate=gate, dest_name=name)
            folder.add(r)
            advance(f"{name}: {r.status}")
            return r

        results = list(await asyncio.gather(*(one(t, n) for t, n in zip(loaded, names, strict=True))))
    return HardenRun(results, jobs)
