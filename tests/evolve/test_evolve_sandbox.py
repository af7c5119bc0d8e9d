"""`envevo evolve` for real: a procedural lineage in containers, killed with -9 mid-run, resumed, exported,
and every exported version re-verified.

Two generations are enough for the property: the kill lands inside generation 2 (generation 1 committed, generation 2's
sandboxes up), so the resume has a half-done generation to finish. The exported tasks are the verified versions byte
for byte (checked on the host) and run again in containers (oracle and the empty solution); their red team and
mutation verdicts were given during the run, on the same bytes.
"""

import json
import signal
import socket
import subprocess
import time
import tomllib
from pathlib import Path

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
    args = ["evolve", str(seed), "--run", str(run), "--generations", "2", "--repeats", "1"]
    proc = subprocess.Popen([*ENVEVO, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    owner = f"{socket.gethostname()}:{proc.pid}"
    deadline = time.monotonic() + 600
    while _committed(run) < 1:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "generation 1 never committed"
        time.sleep(0.5)
    while not list_containers(sandbox, owner=owner):  # inside generation 2: its sandboxes are up
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "generation 2 started no sandbox"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    with LineageStore.open(run, create=False) as store:
        assert store.check() == []
        assert store.lineages()[0].latest_generation == 1  # killed mid-generation 2

    resumed = run_cli(*args, "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads(resumed.stdout)["lineages"][0]
    assert summary["status"] == "done" and summary["generations"] == 2
    with LineageStore.open(run, create=False) as store:
        assert store.check() == []
        versions = store.versions()
        assert [v.generation for v in versions] == [0, 1, 2]
        assert all(v.verified for v in versions)
        # D_T never falls along the lineage under the default policy.
        assert all(b.D_T >= a.D_T for a, b in zip(versions, versions[1:], strict=False))
        for v in versions[1:]:
            if v.direction == "length":
                assert v.L > store.version(v.lineage_id, v.generation - 1).L
    # The resumed run swept the killed run's sandboxes.
    assert list_containers(sandbox, owner=owner) == []

    shown = json.loads(run_cli("lineage", "show", str(run), "--json").stdout)
    gens = shown["lineages"][0]["generations"]
    assert [g["generation"] for g in gens] == [0, 1, 2]
    assert {"generation", "direction", "L", "D_T", "mutated", "verified"} <= set(gens[1])

    export = tmp_path / "export"
    exported = run_cli("export", str(run), "--out", str(export), "--format", "harbor")
    assert exported.returncode == 0, exported.stderr
    names = sorted(p.name for p in export.iterdir() if p.name != ".envevo-export.json")  # export's own marker
    assert names == [f"seed__g{g:02d}" for g in range(3)]
    with LineageStore.open(run, create=False) as store:  # what was exported is what was verified
        for v, name in zip(store.versions(), names, strict=True):
            _same_task(store.task_dir(v.task_hash), export / name)
    checked = run_cli("verify", str(export), "--repeats", "1", "--red-team", "off", "--mutation", "off", "--json",
                      "--jobs-dir", str(tmp_path / "jobs"))
    verdicts = json.loads(checked.stdout)
    assert [v["ok"] for v in verdicts] == [True] * 3, [v for v in verdicts if not v["ok"]]
    assert checked.returncode == 0, checked.stderr


def _same_task(stored: Path, exported: Path) -> None:
    """Every file byte for byte, and task.toml equal but for the two things export renames: the task's name and
    where it came from ([metadata.envevo.lineage])."""
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and p.name != "task.toml"}

    assert files(exported) == files(stored), exported.name
    a, b = tomllib.loads((stored / "task.toml").read_text()), tomllib.loads((exported / "task.toml").read_text())
    for config in (a, b):
        config.get("task", {}).pop("name", None)
        meta = config.get("metadata", {})
        meta.get("envevo", {}).pop("lineage", None)
        if meta.get("envevo") == {}:
            del meta["envevo"]
        if meta == {}:
            config.pop("metadata", None)
    assert a == b, exported.name
