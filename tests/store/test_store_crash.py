"""kill -9 at a random moment loses at most the generation in flight and never corrupts the store."""

from __future__ import annotations

import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

from envevo.store import LineageStore, TryStatus
from envevo.task import dir_hash
from tests.conftest import ROOT

NAMES = ["alpha", "beta", "gamma"]


def _start_writer(run: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.test_store_support", str(run), *NAMES],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _acked(lines: str) -> dict[str, int]:
    """Highest generation per lineage the writer reported as committed."""
    out: dict[str, int] = {}
    for line in lines.splitlines():
        lid, g = line.split()
        out[lid] = max(out.get(lid, 0), int(g))
    return out


def _assert_sound(run: Path, acked: dict[str, int]) -> dict[str, int]:
    conn = sqlite3.connect(run / "store.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with LineageStore.open(run, create=False) as store:
        assert not list((run / ".tmp").iterdir()), "staging dirs of the killed writer were not cleaned"
        latest = {}
        for lin in store.lineages():
            versions = store.versions(lin.id)
            assert [v.generation for v in versions] == list(range(len(versions))), lin.id
            for prev, cur in pairwise(versions):
                assert cur.parent_hash == prev.task_hash
                assert cur.candidate_id is not None and store.candidates(lin.id, cur.generation)
            for v in versions:
                d = run / "tasks" / v.task_hash
                assert d.is_dir(), f"{lin.id} g{v.generation}: task dir missing"
                assert dir_hash(d) == v.task_hash, f"{lin.id} g{v.generation}: task dir does not hash to its name"
                assert store.load_version_task(v.task_hash).instruction.startswith(f"generation {v.generation}")
            # Every generation the writer acknowledged survived the kill.
            assert versions[-1].generation >= acked.get(lin.id, 0), (lin.id, versions[-1].generation, acked)
            # Nothing of the generation in flight passes for committed.
            nxt = versions[-1].generation + 1
            assert store.version(lin.id, nxt) is None
            assert all(t.status is not TryStatus.COMMITTED for t in store.tries(lin.id, nxt))
            latest[lin.id] = versions[-1].generation
        assert store.check() == []
    return latest


def test_kill_9_at_random_moments_never_corrupts(tmp_path: Path) -> None:
    seed = int(os.environ.get("ENVEVO_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    run = tmp_path / "run"
    acked: dict[str, int] = {}
    progress = []
    for round_no in range(8):
        proc = _start_writer(run)
        try:
            # Wait for the writer to reach its loop (its first acknowledged commit), then kill it at a random moment.
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, f"writer did not start (seed {seed})"
            first = proc.stdout.readline()
            assert first, f"writer died: {proc.stderr.read()} (seed {seed})"
            time.sleep(rng.uniform(0.0, 0.4))
            os.kill(proc.pid, signal.SIGKILL)
            rest, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL, f"writer ended on its own: {stderr} (seed {seed})"
        for lid, g in _acked(first + rest).items():
            acked[lid] = max(acked.get(lid, 0), g)
        latest = _assert_sound(run, acked)
        assert set(latest) == set(NAMES), f"round {round_no} (seed {seed})"
        progress.append(sum(latest.values()))
    # The runs resumed where they stopped: every round committed something on top of the last.
    assert all(b > a for a, b in pairwise(progress)), (progress, seed)
