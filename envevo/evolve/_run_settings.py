"""A run's settings on disk: a new run stores its EvolveConfig; `--resume` continues with the stored one."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

from envevo.errors import UserError
from envevo.evolve._config import EvolveConfig
from envevo.verify import switch_options

if TYPE_CHECKING:
    from envevo.store import LineageStore

#: What a resume takes from its command line, given or not: how far and how fast a run goes.
RESUME_MAY_CHANGE = ("generations", "trial_concurrency", "lineage_concurrency")
#: What a resume changes only when the command line names it (else the stored value stands): what "verified" means
#: (red team, mutation, oracle repeats, the drift bound), where it verifies, and the loops' budgets. A change applies
#: from the resume on, said in one line; each candidate's stored verifications show which verifiers it met.
RESUME_IF_GIVEN = (*switch_options(), "model_mutants", "repeats", "max_drift", "env", "image_map", "plan_budget",
                   "env_budget")


def open_run(out_dir: Path, given: EvolveConfig, *, resume: bool, explicit: Collection[str] = (),
             notify: Callable[[str], None] | None = None) -> tuple[LineageStore, EvolveConfig]:
    """The run store at `out_dir` (created if new) and the settings the run goes on with."""
    from envevo.store import LineageStore, RunPaths

    paths = RunPaths(run_dir=out_dir)
    if out_dir.exists() and not resume and not paths.db.exists() and any(p != paths.lock for p in out_dir.iterdir()):
        raise UserError(f"{out_dir} exists and is not an envevo run; choose another --run")
    # One writer per run: a second evolve on it would redo every generation and abandon the first one's tries.
    store = LineageStore.open(out_dir, create=True, hold="envevo evolve")
    try:
        return store, settle_run_config(store, given, resume=resume, explicit=explicit, notify=notify)
    except BaseException:
        store.close()
        raise


def settle_run_config(store: LineageStore, given: EvolveConfig, *, resume: bool, explicit: Collection[str] = (),
                      notify: Callable[[str], None] | None = None) -> EvolveConfig:
    """New settings are stored; a resume keeps the stored ones, with `RESUME_MAY_CHANGE` taken from `given`, and
    `RESUME_IF_GIVEN` too where `explicit` (the settings the command line named) has them, each change told to
    `notify`."""
    stored = store.run_config()
    if stored is None:
        store.set_run_config(given.model_dump(mode="json"))
        return given
    if not resume:
        raise UserError(f"{store.run_dir} already holds a run: pass --resume to continue it, or choose another --run")
    # A run stored before a verifier existed (the mutation verifier) goes on without it: its lineage stays verified
    # one way. A stored run names every switch of its time, so a switch it lacks is a verifier added since.
    old = EvolveConfig(**{**dict.fromkeys(switch_options(), "off"), **stored})
    clash = old.resumable_with(given)
    if clash:
        raise UserError(f"--resume with different settings ({'; '.join(clash)}); resume with the stored ones, or use another --run")
    changed = [k for k in RESUME_IF_GIVEN if k in explicit and getattr(given, k) != getattr(old, k)]
    for k in changed:
        (notify or (lambda _line: None))(
            f"--{k.replace('_', '-')} {_shown(getattr(given, k))} from this resume on (the run stored "
            f"{_shown(getattr(old, k))}; "
            "generations committed before keep the verdicts they got)")
    merged = old.model_copy(update={k: getattr(given, k) for k in (*RESUME_MAY_CHANGE, *changed)})
    store.set_run_config(merged.model_dump(mode="json"))
    return merged


def _shown(value: object) -> object:
    """A setting as its option is spelt: no bound (None) is "off"."""
    return "off" if value is None else value
