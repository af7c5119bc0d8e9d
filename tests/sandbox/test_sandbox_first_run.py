"""A first run from nothing: `envevo doctor --fix`, then `envevo verify`, on a fresh machine (issue 27).

State left on a machine (a containers.conf under ~/.envevo, images in the podman store) hid a missing step before:
every clean-clone run was green only because earlier runs had prepared the host. This test gives the CLI a fresh,
empty ENVEVO_HOME and a fresh, empty podman store of its own (graphroot and runroot in a temp dir, named by
CONTAINERS_STORAGE_CONF), with no CONTAINERS_CONF from the real home, so nothing prepared earlier can help.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

# Settings that `envevo.sandbox.activate()` (the `sandbox` fixture) or a user's shell may carry in from the real home.
_LEAKS = ("CONTAINERS_CONF", "ENVEVO_HOST_CA_BUNDLE", "ENVEVO_HOME", "CONTAINERS_STORAGE_CONF")


def _storage_conf(tmp: Path, driver: str) -> Path:
    conf = tmp / "storage.conf"
    conf.write_text(f'[storage]\ndriver = "{driver}"\ngraphroot = "{tmp / "graph"}"\nrunroot = "{tmp / "run"}"\n')
    return conf


def _fresh_env(tmp: Path) -> dict[str, str]:
    """The environment of a fresh machine: an empty ENVEVO_HOME and an empty store (overlay, else vfs)."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKS}
    (tmp / "home").mkdir()
    env["ENVEVO_HOME"] = str(tmp / "home")
    for driver in ("overlay", "vfs"):
        env["CONTAINERS_STORAGE_CONF"] = str(_storage_conf(tmp, driver))
        if subprocess.run(["podman", "info"], env=env, capture_output=True, timeout=120).returncode == 0:
            return env
    pytest.fail(f"podman cannot open a store of its own under {tmp}")


def _drop_store(tmp: Path, env: dict[str, str]) -> None:
    """Remove the temp store: its containers and images through podman (which unmounts their layers), then any mount
    left under it, then the files. Not `podman system reset`: it also removes networks, which all stores share."""
    for args in (["rm", "-af"], ["pod", "rm", "-af"], ["volume", "rm", "-af"], ["rmi", "-af"]):
        subprocess.run(["podman", *args], env=env, capture_output=True, timeout=600)
    mounts = [line.split()[4].encode().decode("unicode_escape") for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for mount in sorted((m for m in mounts if Path(m).is_relative_to(tmp)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, timeout=60)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.sandbox
def test_doctor_then_verify_pass_at_the_first_attempt_on_a_fresh_machine(sandbox, tmp_path_factory):
    """doctor --fix then verify csv-etl, from nothing. Measured here: 94-105 s in all (doctor about 45 s, most of it
    building the Debian base with debootstrap; verify about 45 s, building the task image and two oracle runs)."""
    tmp = tmp_path_factory.mktemp("fresh-machine")
    env = _fresh_env(tmp)
    try:
        doctor = run_cli("doctor", "--fix", "--json", "--tasks", str(ROOT / "examples" / "seeds" / "csv-etl"), env=env)
        report = json.loads(doctor.stdout or "{}")
        assert doctor.returncode == 0 and report.get("ok"), doctor.stdout + doctor.stderr
        start = next(c for c in report["checks"] if c["name"] == "container start")
        # The conf is written only where the host needs it, and then into the fresh home, never the real one.
        assert start["status"] == "ok" or (tmp / "home" / "containers.conf").is_file(), start
        verify = run_cli("verify", str(ROOT / "examples" / "seeds" / "csv-etl"), "--red-team", "off",
                         "--jobs-dir", str(tmp / "jobs"), "--json", env=env)
        assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
        assert [r["status"] for r in json.loads(verify.stdout)] == ["ok"]
    finally:
        _drop_store(tmp, env)
