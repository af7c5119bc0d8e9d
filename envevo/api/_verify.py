"""`verify(tasks, config)`: oracle, invalid-test, the red team and the mutation verifier on tasks, in sandboxes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envevo.api._check import Checking
from envevo.api._config import CheckConfig
from envevo.api._host import Notify, Progress, no_progress, quiet, verdicts_exit_code
from envevo.errors import ExitCode, UserError

if TYPE_CHECKING:
    from envevo.verify import Verdict

#: A task refused before any container started: its path and the one line why.
Refusal = tuple[Path, str]


def refusal(task_dir: Path, reason: str) -> dict:
    """The JSON object of a task refused before any container started (it cannot be loaded or run as given)."""
    return {"task": task_dir.name, "task_dir": str(task_dir), "status": "refused", "ok": False, "reason": reason}


@dataclass
class VerifyResult:
    """Per task its verdict, or why it was refused; the command's model usage and where the trial logs are."""

    verdicts: list[Verdict]
    refused: list[Refusal]
    jobs: Path
    wall_s: float = 0.0
    usage: list[dict[str, Any]] = field(default_factory=list)
    budget_stop: str | None = None  # the line saying the cap stopped the model, if it did

    @property
    def exit_code(self) -> int:
        """0 ok; 1 some task fails (a refused one counts); 3 inconclusive; 4 weak; 2 every task refused."""
        if not self.verdicts:
            return int(ExitCode.USAGE)
        return verdicts_exit_code([v.status for v in self.verdicts] + ["fail"] * len(self.refused))


async def verify(tasks: list[Path], config: CheckConfig | None = None, *, jobs_dir: Path | None = None,
                 notify: Notify = quiet, progress: Progress = no_progress) -> VerifyResult:
    """Verify task dirs (Harbor or Terminal-Bench 1, or folders of them). A task that cannot be loaded or run as
    given is refused with its one line; the others run. Raises UserError for bad input, before any container."""
    from envevo._home import private_dir
    from envevo.task import first_duplicate, load_task_batch
    from envevo.verify import trial_line, unmet_on_host, verify_tasks

    config = config or CheckConfig()
    sandbox, verification = config.sandbox, config.verification
    # Each task loaded (and validated) on its own, before any container starts: a path that does not exist is said
    # at once; a task refused here gets its one line in the results, the others run.
    loaded, refused = load_task_batch(tasks)
    checking = await Checking.open(config, notify)
    dup = first_duplicate([t.name for t in loaded])
    if dup:
        raise UserError(f"two tasks are named {dup!r}; verify them in separate runs")
    jobs = (jobs_dir or Path("jobs") / f"verify-{datetime.now():%Y%m%d-%H%M%S}").resolve()
    private_dir(jobs)  # 0700 when envevo creates it: trial logs hold task output
    # TB1 tasks and image maps need a converted copy; Harbor tasks without a map run in place.
    # Local engines: digest-pinned / mirror-prefixed references go to local stand-ins, each stated.
    prepared = {}
    for t in loaded:
        try:
            prepared[t.name] = checking.runnable(t, jobs / "_tasks")
        except UserError as exc:
            refused.append((t.source or Path(t.name), str(exc)))
    runnable = [(name, task_dir) for name, (task_dir, _) in prepared.items()]
    if not runnable:
        return VerifyResult([], refused, jobs)  # nothing could be verified

    verifiers = checking.verifiers
    total = sum(len(v.trial_specs(d, sandbox.env, jobs / n)) for n, d in runnable if unmet_on_host(d) is None
                for v in verifiers)
    t0 = time.monotonic()
    with progress(f"verifying {len(runnable)} task(s)", total) as advance:
        verdicts = await verify_tasks(runnable, jobs, env=sandbox.env, verifiers=verifiers,
                                      concurrency=sandbox.trial_concurrency, strict=verification.strict,
                                      on_trial_done=lambda t: advance(f"{t.task}: {trial_line(t)}"))
    wall = time.monotonic() - t0
    originals = {t.name: t.source for t in loaded}
    # Fixes name the user's task dir, not the converted copy the trials ran.
    verdicts = [v.naming(shown) if (shown := originals.get(v.task)) and v.task_dir != shown else v for v in verdicts]
    for v in verdicts:
        v.substitutions = prepared[v.task][1]
    return VerifyResult(verdicts, refused, jobs, wall, checking.usage, checking.budget_stop)

