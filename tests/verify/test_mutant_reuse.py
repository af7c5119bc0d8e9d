"""Cost control of the mutation verifier (issue 26): a mutant killed by the parent on byte-identical inputs is not run
again, and any byte changed in its inputs means a new run. Containers are replaced by a recording runtime that plays
the generated tests: a mutant of step t fails the checks of step t and every later step (what a wrong intermediate
file does to a chain), the reference passes them all."""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest

from envevo.catalog import build_blocks, chain_from_task, random_chain
from envevo.evolve import EvolveConfig
from envevo.evolve._loop import GenerationWork
from envevo.evolve._recorder import StoreRecorder
from envevo.evolve.engines.procedural import ProceduralEngine, compose, mutate
from envevo.evolve.engines.procedural._residual import KEPT, residual
from envevo.runtime import ErrorKind, TrialOutcome, TrialSpec
from envevo.store import LineageStore
from envevo.task import Task, load_task, save
from envevo.trace import Direction, Effort
from envevo.verify import MutationVerifier, killed_keys, verify_tasks


class RecordingRuntime:
    """Stands in for `envevo.runtime.run_trials`: records each trial it is asked to run and writes what the
    generated tests would print."""

    def __init__(self) -> None:
        self.trials: list[str] = []

    async def __call__(self, specs: list[TrialSpec], *, concurrency: int, retries: int, on_done=None,
                       gate=None) -> list[TrialOutcome]:
        out = []
        for s in specs:
            self.trials.append(s.trial_name or "")
            m = re.search(r"__mut-step(\d+)-", s.trial_name or "")
            broken = int(m.group(1)) if m else None
            lines = [f"FAIL {c['check']} {c['path']} - AssertionError: expected" if broken and b.index + 1 >= broken
                     else f"PASS {c['check']} {c['path']}"
                     for b in build_blocks(chain_from_task(load_task(s.task_dir))) for c in b.checks]
            d = s.trials_dir / (s.trial_name or "trial")
            (d / "verifier").mkdir(parents=True, exist_ok=True)
            (d / "verifier" / "test-stdout.txt").write_text("\n".join(lines) + "\n")
            out.append(TrialOutcome(task="t", agent=s.agent, reward=0.0 if broken else 1.0, error_kind=ErrorKind.OK,
                                    trial_dir=d))
        return out

    def mutants(self) -> set[str]:
        return {n.split("__mut-", 1)[1].rsplit("__", 1)[0] for n in self.trials if "__mut-" in n}


@pytest.fixture
def runtime(monkeypatch) -> RecordingRuntime:
    fake = RecordingRuntime()
    monkeypatch.setattr("envevo.runtime.run_trials", fake)
    return fake


def _verify(task_dir: Path, trials: Path, kills: frozenset[str] = frozenset()):
    v = MutationVerifier()
    v.inherit(task_dir, kills)
    (verdict,) = asyncio.run(verify_tasks([("t", task_dir)], trials, verifiers=[v]))
    return verdict.reports["mutation"]


def _length_edit(tmp_path: Path) -> tuple[Path, Path, int]:
    """A procedural parent, its child by the engine's length edit, and how many leading steps the edit kept."""
    chain = random_chain(None, 3, 7)
    child = mutate(chain, "length", "low", random.Random(1))
    assert child is not None
    rows = residual(chain, child)
    kept = next((i for i, r in enumerate(rows) if r["status"] != KEPT or r["step"] != i + 1), len(rows))
    return save(compose(chain), tmp_path / "parent"), save(compose(child), tmp_path / "child"), kept


def test_a_length_edit_reuses_the_parents_kills_of_its_unchanged_steps(tmp_path: Path, runtime: RecordingRuntime) -> None:
    parent, child, kept = _length_edit(tmp_path)
    assert kept >= 1
    first = _verify(parent, tmp_path / "t1")
    assert first.passed and first.metrics["reused"] == 0 and len(runtime.mutants()) == first.metrics["run"] > 0
    kills = killed_keys(first.metrics)
    runtime.trials.clear()
    again = _verify(child, tmp_path / "t2", kills)
    mutants = again.metrics["mutants"]
    reused = again.metrics["reused"]
    # The steps the edit kept in front keep their fixtures, commands and checks: only the others run.
    ran = runtime.mutants()
    assert reused > 0 and len(ran) == mutants - reused == again.metrics["run"]
    assert {int(re.match(r"step(\d+)-", m).group(1)) for m in ran} == set(range(kept + 1, mutants // 2 + 1)), ran
    assert again.passed and again.metrics["killed"] == mutants and again.metrics["score"] == 1.0
    assert f"{reused} of {mutants} mutants reused from the parent" in again.notes[-1]
    # The reused kills carry on to the next generation, beside the new ones.
    assert len(killed_keys(again.metrics)) >= mutants


@pytest.mark.parametrize("path", ["tests/test.sh", "tests/test_outputs.py", "fixture"])
def test_one_byte_changed_in_the_tests_or_a_fixture_means_a_new_run(tmp_path: Path, runtime: RecordingRuntime,
                                                                   path: str) -> None:
    parent, child, _ = _length_edit(tmp_path)
    kills = killed_keys(_verify(parent, tmp_path / "t1").metrics)
    task = load_task(child)
    if path == "fixture":  # the first step's fixture script, whatever its scenario
        path = f"environment/fixtures/{build_blocks(chain_from_task(task))[0].scenario}.py"
    f = task.files[path]
    task.write(path, f.data + b" ", executable=f.executable)  # one byte, where it changes nothing the tests see
    edited = save(task, tmp_path / "edited")
    runtime.trials.clear()
    rep = _verify(edited, tmp_path / "t2", kills)
    assert rep.metrics["reused"] == 0 and rep.metrics["run"] == rep.metrics["mutants"] == len(runtime.mutants())


def test_a_kill_by_a_later_steps_check_is_not_reused_for_the_step(tmp_path: Path, runtime: RecordingRuntime,
                                                                  monkeypatch) -> None:
    """A step-t key certifies only a kill shown by step t's own checks: a wrong variant caught downstream says
    nothing about step t's inputs alone."""
    parent, child, _ = _length_edit(tmp_path)
    real = RecordingRuntime.__call__

    async def downstream_only(self, specs, **kw):
        outs = await real(self, specs, **kw)
        for o in outs:  # keep the FAIL lines of the last step's checks only
            log = o.trial_dir / "verifier" / "test-stdout.txt"
            last = {c["path"] for c in build_blocks(chain_from_task(load_task(parent)))[-1].checks}
            log.write_text("".join(ln for ln in log.read_text().splitlines(keepends=True)
                                   if not ln.startswith("FAIL") or ln.split()[2] in last))
        return outs

    monkeypatch.setattr(RecordingRuntime, "__call__", downstream_only)
    kills = killed_keys(_verify(parent, tmp_path / "t1").metrics)
    runtime.trials.clear()
    rep = _verify(child, tmp_path / "t2", kills)
    assert rep.metrics["reused"] == 0


def test_the_loop_reuses_the_stored_parents_kills(tmp_path: Path, runtime: RecordingRuntime) -> None:
    """Generation 2 evolved from generation 1 reads generation 1's stored mutation verification (the recorder's
    `mutant_kills`) and runs fewer containers."""
    seed: Task = compose(random_chain(None, 3, 11))
    cfg = EvolveConfig(directions=[Direction.LENGTH], effort=Effort.LOW, mutation="on", max_drift=None, env_budget=1)
    with LineageStore.open(tmp_path / "run") as store:
        lid = store.create_lineage("seed", seed)
        rec = StoreRecorder(store)
        work = GenerationWork(ProceduralEngine(), cfg, verifiers=[MutationVerifier()])
        reports = []
        for g in (1, 2):
            runtime.trials.clear()
            parent = store.latest_version(lid)
            assert asyncio.run(work.run(lid, g, parent, rec)) is None
            version = store.latest_version(lid)
            [rep] = [v for v in store.verifications(version.candidate_id) if v.verifier == "mutation"]
            assert len(runtime.mutants()) == rep.metrics["run"] == rep.metrics["mutants"] - rep.metrics["reused"]
            reports.append(rep)
    assert reports[0].metrics["reused"] == 0  # a seed has no stored kills of this run
    assert reports[1].metrics["reused"] > 0 and any("reused from the parent" in n for n in reports[1].notes)
