"""`envevo evolve` for real: a procedural lineage in containers, killed with -9 mid-run, resumed, exported,
and every exported version re-verified."""

import json
import signal
import socket
import subprocess
import time

import pytest

from envevo.runtime import list_containers
from envevo.store import LineageStore
from tests.conftest import ENVEVO, ROOT, run_cli

pytestmark = pytest.mark.sandbox


def _committed(run) -> int:
    try:
        with LineageStore.open(run, create=False) as store:
            lins = store.lineages()
            return lins[0].latest_generation if lins else -1
    except Exception:  # not created yet
        return -1


def test_kill_9_mid_run_then_resume_then_export_verifies(sandbox, tmp_path):
    seed, run = tmp_path / "seed", tmp_path / "run"
    made = run_cli("seed", "procedural", str(seed), "--length", "2", "--seed", "3", "--json")
    assert made.returncode == 0, made.stderr
    args = ["evolve", str(seed), "--run", str(run), "--generations", "3", "--repeats", "1"]
    proc = subprocess.Popen([*ENVEVO, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while _committed(run) < 1:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "generation 1 never committed"
        time.sleep(0.5)
    time.sleep(4)  # now inside generation 2: plans written, sandboxes up
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    with LineageStore.open(run, create=False) as store:
        assert store.check() == []
        killed_at = store.lineages()[0].latest_generation
        assert killed_at in (1, 2)

    resumed = run_cli(*args, "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads(resumed.stdout)["lineages"][0]
    assert summary["status"] == "done" and summary["generations"] == 3
    with LineageStore.open(run, create=False) as store:
        assert store.check() == []
        versions = store.versions()
        assert [v.generation for v in versions] == [0, 1, 2, 3]
        assert all(v.verified for v in versions)
        # D_T never falls along the lineage under the default policy.
        assert all(b.D_T >= a.D_T for a, b in zip(versions, versions[1:], strict=False))
        for v in versions[1:]:
            if v.direction == "length":
                assert v.L > store.version(v.lineage_id, v.generation - 1).L
    # The resumed run swept the killed run's sandboxes.
    assert list_containers(sandbox, owner=f"{socket.gethostname()}:{proc.pid}") == []

    shown = json.loads(run_cli("lineage", "show", str(run), "--json").stdout)
    gens = shown["lineages"][0]["generations"]
    assert [g["generation"] for g in gens] == [0, 1, 2, 3]
    assert {"generation", "direction", "L", "D_T", "mutated", "verified"} <= set(gens[1])

    export = tmp_path / "export"
    exported = run_cli("export", str(run), "--out", str(export), "--format", "harbor")
    assert exported.returncode == 0, exported.stderr
    names = sorted(p.name for p in export.iterdir() if p.name != ".envevo-export.json")  # export's own marker
    assert names == [f"seed__g{g:02d}" for g in range(4)]
    checked = run_cli("verify", str(export), "--repeats", "1", "--json", "--jobs-dir", str(tmp_path / "jobs"))
    verdicts = json.loads(checked.stdout)
    assert [v["ok"] for v in verdicts] == [True] * 4, [v for v in verdicts if not v["ok"]]
