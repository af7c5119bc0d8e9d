"""doctor and the network-cut helper image of verifiers' container runtime (issue 36): verifiers builds
`localhost/verifiers-network:1` on first use from alpine:3.22 and Alpine's mirror, which an air-gapped host cannot
reach. `envevo doctor` says so (a warning: envevo's own sandboxes do not need it); `--fix` builds it as verifiers
would where the registry answers, else a stand-in from the local Debian base, labelled and named in doctor's line.
A fake engine here; the real build runs in tests/trainers/test_adapters_taskset.py (verifiers' own podman rollouts)."""

from __future__ import annotations

import pytest

from envevo.sandbox import Doctor, Status
from envevo.sandbox import _doctor_helper as helper

DEBIAN = helper.STANDIN_BASE


class FakeEngine:
    """Local images (name -> labels), a registry that answers or not, and the builds asked of it."""

    def __init__(self, images: dict[str, dict[str, str]], registry: bool):
        self.images = images
        self.registry = registry
        self.builds: list[tuple[str, str, dict[str, str]]] = []

    def install(self, monkeypatch):
        monkeypatch.setattr(helper, "image_info", lambda engine, image: ("id", self.images[image]) if image in self.images else None)
        monkeypatch.setattr(helper, "image_id", lambda engine, image: "id" if image in self.images else None)
        monkeypatch.setattr(helper, "_pulled", lambda engine, image: self.registry)

        def build(engine, text, tag, labels, what, files=None):
            self.builds.append((text, tag, labels))
            if "apk add" in text and not self.registry:
                raise AssertionError("an alpine build without a registry")
            self.images[tag] = labels

        monkeypatch.setattr(helper, "_build", build)
        return self


def test_without_fix_a_missing_helper_is_a_warning_naming_the_image_and_the_fix(monkeypatch):
    engine = FakeEngine({DEBIAN: {}}, registry=False).install(monkeypatch)
    check = Doctor(fix=False).network_helper()
    assert check.status is Status.WARN and check.ok  # a warning: doctor's exit code stays 0
    assert "localhost/verifiers-network:1 is missing" in check.detail and "alpine:3.22" in check.detail
    assert check.fix is not None and check.fix.startswith("envevo doctor --fix") and "stand-in" in check.fix
    assert engine.builds == []


def test_fix_on_an_air_gapped_host_builds_a_stated_stand_in_from_the_debian_base(monkeypatch):
    engine = FakeEngine({DEBIAN: {}}, registry=False).install(monkeypatch)
    check = Doctor(fix=True).network_helper()
    (text, tag, labels), = engine.builds
    assert tag == "localhost/verifiers-network:1" and text.startswith(f"FROM {DEBIAN}\n")
    assert "iptables" in text and "iproute2" in text  # what verifiers' cut script runs: iptables, ip
    assert labels == {"envevo.standin": helper.STANDIN}
    assert check.status is Status.FIXED
    assert check.detail.startswith("stand-in localhost/verifiers-network:1 → Debian bookworm + iptables, iproute2")
    assert "alpine:3.22 cannot be pulled" in check.detail
    # The next doctor run finds it, and says it is a stand-in.
    again = Doctor(fix=False).network_helper()
    assert again.status is Status.OK and again.detail == f"localhost/verifiers-network:1 (stand-in: {helper.STANDIN})"


def test_fix_with_a_registry_builds_it_as_verifiers_does(monkeypatch):
    engine = FakeEngine({DEBIAN: {}}, registry=True).install(monkeypatch)
    check = Doctor(fix=True).network_helper()
    ((text, tag, labels),) = engine.builds
    assert text == "FROM docker.io/library/alpine:3.22\nRUN apk add --no-cache iptables\n" and labels == {}
    assert check.status is Status.FIXED and "as verifiers does" in check.detail


def test_without_any_base_fix_says_what_is_missing_and_stays_a_warning(monkeypatch):
    engine = FakeEngine({}, registry=False).install(monkeypatch)
    check = Doctor(fix=True).network_helper()
    assert check.status is Status.WARN and engine.builds == []
    assert "the Debian base docker.io/library/debian:bookworm-slim to stand in from is missing" in check.detail
    assert check.fix is not None and "load -i" in check.fix


@pytest.mark.parametrize("fix", [False, True])
def test_doctor_runs_it_last_after_every_other_check(monkeypatch, fix):
    from envevo.sandbox import Check

    doc = Doctor(fix=fix)
    for step in ("python", "engine_installed", "runc", "compose", "container_start", "probe_image", "base_image_checks",
                 "orphans", "tls"):
        result = Check(name=step, status=Status.OK, detail="fine")
        monkeypatch.setattr(doc, step, lambda *a, _r=result, **k: [_r] if _r.name == "base_image_checks" else _r)
    FakeEngine({DEBIAN: {}}, registry=False).install(monkeypatch)
    checks = doc.run()
    assert checks[-1].name == "verifiers network helper"
    assert checks[-1].status is (Status.FIXED if fix else Status.WARN)
