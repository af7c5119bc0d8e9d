"""`envevo doctor` names the lighter backend (`--env bwrap`): what it needs, whether this host has it, and a missing
one is a warning beside podman but a failure when asked for."""

from __future__ import annotations

import shutil

import pytest

from envevo.runtime import BWRAP
from envevo.sandbox import Doctor, Status
from envevo.sandbox import _doctor as doctor_module


@pytest.mark.parametrize(("env", "status"), [("podman", Status.WARN), (BWRAP.name, Status.FAIL)])
def test_a_missing_bwrap_is_named_with_what_it_needs_and_the_fix(monkeypatch, env, status):
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == BWRAP.name else real_which(name, *a, **k))
    monkeypatch.setattr(doctor_module, "_apt_install", lambda packages: False)
    doc = Doctor(env=env)
    assert doc.engine == BWRAP.images.name  # bwrap runs podman's images: podman is what the other checks check
    check = doc.bwrap_check("debian:bookworm-slim")
    assert check.status is status
    assert "not installed" in check.detail and "user namespaces" in check.detail
    assert check.fix is not None and "bubblewrap" in check.fix


def test_fix_installs_bubblewrap_from_debian(monkeypatch):
    installed: list[list[str]] = []
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == BWRAP.name and not installed
                        else real_which(name, *a, **k))
    monkeypatch.setattr(doctor_module, "_apt_install", lambda packages: installed.append(packages) or True)
    monkeypatch.setattr(doctor_module, "_run", lambda args, **kw: doctor_module.subprocess.CompletedProcess(args, 1, "", "no image"))
    check = Doctor(env=BWRAP.name, fix=True).bwrap_check("debian:bookworm-slim")
    assert installed == [["bubblewrap"]]
    assert check.status is Status.FAIL and "no sandbox starts here" in check.detail  # installed, and the probe says why not
