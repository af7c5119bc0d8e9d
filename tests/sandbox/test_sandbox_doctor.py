"""`envevo doctor`: parsing base images from tasks, one-line failures, and idempotence on a healthy host."""

import json

import pytest

from envevo.sandbox import Doctor, Status, images_of
from envevo.sandbox._base_image import canonical, debian_suite
from tests.conftest import FIXTURES, ROOT, run_cli


def test_images_of_reads_from_lines_and_skips_build_stages(tmp_path):
    env = tmp_path / "t" / "environment"
    env.mkdir(parents=True)
    (env / "Dockerfile").write_text(
        "FROM --platform=linux/amd64 debian:bookworm-slim AS build\nRUN true\nFROM build\nFROM python:3.12-slim\n"
    )
    assert images_of([tmp_path / "t"]) == ["debian:bookworm-slim", "python:3.12-slim"]


def test_images_of_walks_tb1_dirs_and_dataset_folders(tmp_path):
    data = tmp_path / "dataset"
    tb1 = data / "tb1-task"
    tb1.mkdir(parents=True)
    (tb1 / "task.yaml").write_text("instruction: do it\n")
    (tb1 / "Dockerfile").write_bytes(b"ARG PY=python:3.13-slim-bookworm\r\nFROM ${PY}\r\nRUN true\r\n")
    (tb1 / "solution.sh").write_text("true\n")
    (tb1 / "run-tests.sh").write_text("true\n")
    harbor = data / "harbor-task" / "environment"
    harbor.mkdir(parents=True)
    (harbor / "Dockerfile").write_text("FROM public.ecr.aws/docker/library/debian:bookworm-slim@sha256:" + "0" * 64 + "\n")
    (data / "harbor-task" / "instruction.md").write_text("x\n")
    assert images_of([data]) == [
        "public.ecr.aws/docker/library/debian:bookworm-slim@sha256:" + "0" * 64,
        "python:3.13-slim-bookworm",
    ]


def test_digest_pinned_debian_is_not_rejected():
    from envevo.sandbox import plan_standin

    plan = plan_standin("public.ecr.aws/docker/library/debian:bookworm-slim@sha256:" + "0" * 64)
    assert plan is not None and plan.kind == "debian" and plan.tag == "docker.io/library/debian:bookworm-slim"
    assert debian_suite("public.ecr.aws/docker/library/debian:bookworm-slim@sha256:" + "0" * 64) == "bookworm"


def test_prune_options_need_prune():
    result = run_cli("doctor", "--max-gb", "3")
    assert result.returncode != 0 and "go with --prune" in result.stderr
    assert "Traceback" not in result.stderr


def test_debian_names_map_to_suites():
    assert debian_suite("debian:bookworm-slim") == "bookworm"
    assert debian_suite("docker.io/library/debian:trixie") == "trixie"
    assert debian_suite("ubuntu:24.04") is None
    assert canonical("debian:bookworm-slim") == "docker.io/library/debian:bookworm-slim"
    assert canonical("registry.local/x:1") == "registry.local/x:1"


def test_missing_engine_fails_with_one_line_naming_the_fix(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    checks = Doctor(env="podman", fix=False).run()
    last = checks[-1]
    assert last.status is Status.FAIL and last.name == "podman"
    assert "apt-get install" in last.fix and "podman" in last.fix


def test_doctor_rejects_remote_envs():
    from envevo.errors import UserError

    with pytest.raises(UserError):
        Doctor(env="daytona")


@pytest.mark.sandbox
# Serial: a kill -9 test running beside it leaves orphans for a moment, which --fix would sweep ("fixed", not "ok").
@pytest.mark.serial
def test_doctor_fix_changes_nothing_on_a_healthy_host(sandbox):
    first = run_cli("doctor", "--json", "--tasks", str(ROOT / "examples" / "seeds"))
    assert first.returncode == 0, first.stderr
    second = run_cli("doctor", "--fix", "--json", "--tasks", str(FIXTURES / "runtime"))
    report = json.loads(second.stdout)
    assert report["ok"] is True
    # HTTPS from containers may warn (a TLS-intercepting proxy, trust turned off), or be fixed the first time --fix
    # sees such a proxy (builds and containers then trust the host's CA bundle: tests/sandbox/test_tls.py).
    # verifiers' network-cut helper is built by the first --fix (`make sandbox`), warned about before it.
    assert all(c["status"] == "ok" or (c["name"] in ("https from containers", "verifiers network helper")
                                       and c["status"] in ("warn", "fixed"))
               for c in report["checks"]), report
    assert "substitutions" in report


# ---- every base problem at once ------------------------------------------------------------------

GHCR = "ghcr.io/example-org/log-tools:1.4.2"
TOOL = "ghcr.io/example-org/tool:9.9"


def _ok(name):
    from envevo.sandbox import Check

    return lambda *a, **k: Check(name=name, status=Status.OK, detail="fine")


def _task(root, name, dockerfile):
    (root / name / "environment").mkdir(parents=True)
    (root / name / "environment" / "Dockerfile").write_text(dockerfile)
    (root / name / "instruction.md").write_text("x\n")
    (root / name / "tests").mkdir()
    (root / name / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return root / name


def test_without_fix_every_missing_image_is_named_with_what_fix_can_do(monkeypatch):
    users = {"golang:1.25": ["go-task"], GHCR: ["logs", "logs-2"], "python:3.12-slim": ["py"]}
    doc = Doctor(fix=False, images=list(users), users=users)
    monkeypatch.setattr(doc, "_image_exists", lambda image: False)
    checks = doc.base_image_checks()
    assert [c.name for c in checks] == ["base images", "base image golang:1.25", f"base image {GHCR}"]
    assert all(c.status is Status.FAIL for c in checks)
    assert checks[0].detail == "missing: python:3.12-slim" and "envevo doctor --fix" in checks[0].fix
    assert "Go 1.24 in trixie" in checks[1].detail and checks[1].detail.endswith("(used by go-task)")
    assert checks[2].detail.endswith("(used by logs, logs-2)") and f"--image-map {GHCR}=" in checks[2].fix


def test_fix_goes_on_past_an_image_it_cannot_provide(monkeypatch):
    from envevo.errors import UserError
    from envevo.sandbox import StandinEntry, _doctor

    def ensure(engine, image, progress=None):
        if image == "python:3.12-slim":
            return StandinEntry(tag="docker.io/library/python:3.12-slim", source=image, became="Debian trixie, Python 3.13.5",
                                image_id="x", kind="python", suite="trixie")
        raise UserError("building the golang stand-in on trixie failed: E: Unable to locate package golang-go")

    monkeypatch.setattr(_doctor, "_run", lambda args, **kw: _doctor.subprocess.CompletedProcess(args, 1, "", "no such host"))
    monkeypatch.setattr(_doctor, "image_id", lambda engine, image: "present")
    monkeypatch.setattr(_doctor, "ensure_standin", ensure)
    images = [GHCR, "golang:1.22", "node:22", "python:3.12-slim", TOOL]
    doc = Doctor(fix=True, images=images, users={TOOL: ["uses-tool"]})
    monkeypatch.setattr(doc, "_image_exists", lambda image: False)
    checks = doc.base_image_checks()
    assert [c.name for c in checks] == ["base images", f"base image {GHCR}", "base image golang:1.22",
                                        "base image node:22", f"base image {TOOL}"]
    assert checks[0].status is Status.FIXED and "python:3.12-slim → Debian trixie, Python 3.13.5" in checks[0].detail
    assert "cannot pull it, and no local stand-in is built" in checks[1].detail
    assert "Unable to locate package golang-go" in checks[2].detail
    assert "Node.js 22, newer than Debian packages" in checks[3].detail
    assert checks[4].detail.endswith("(used by uses-tool)") and checks[4].fix == checks[1].fix.replace(GHCR, TOOL)


def test_a_base_image_failure_does_not_hide_later_checks(monkeypatch):
    doc = Doctor(fix=True, images=[GHCR])
    for step in ("python", "engine_installed", "runc", "compose", "container_start", "probe_image"):
        monkeypatch.setattr(doc, step, _ok(step))
    monkeypatch.setattr(doc, "_image_exists", lambda image: False)
    monkeypatch.setattr(doc, "orphans", _ok("leftover sandboxes"))
    monkeypatch.setattr(doc, "tls", _ok("https from containers"))
    monkeypatch.setattr(doc, "network_helper", _ok("verifiers network helper"))
    from envevo.sandbox import _doctor

    monkeypatch.setattr(_doctor, "_run", lambda args, **kw: _doctor.subprocess.CompletedProcess(args, 1, "", "no such host"))
    names = [c.name for c in doc.run()]
    assert names[-4:] == [f"base image {GHCR}", "leftover sandboxes", "https from containers", "verifiers network helper"]


@pytest.mark.sandbox
def test_doctor_over_several_tasks_names_every_base_problem_and_the_proxy(sandbox, tmp_path):
    tool = _task(tmp_path, "needs-tool", f"FROM golang:1.99 AS build\nCOPY --from={TOOL} /tool /bin/tool\n"
                                         "FROM build\nCOPY --from=build /bin/tool /usr/local/bin/tool\n")
    ok_task = _task(tmp_path, "fine", "FROM debian:bookworm-slim\n")
    ghcr = FIXTURES / "unpullable" / "ghcr-base"
    for fix in (["--fix"], []):
        proc = run_cli("doctor", *fix, "--json", "--tasks", str(ghcr), "--tasks", str(tool), "--tasks", str(ok_task), timeout=600)
        assert proc.returncode == 1, proc.stderr
        report = json.loads(proc.stdout)
        failed = {c["name"]: c for c in report["checks"] if c["status"] == "fail"}
        assert set(failed) == {f"base image {GHCR}", "base image golang:1.99", f"base image {TOOL}"}, report["checks"]
        assert failed[f"base image {GHCR}"]["detail"].endswith("(used by ghcr-base)")
        assert "Go 1.99, newer than Debian packages" in failed["base image golang:1.99"]["detail"]
        assert failed[f"base image {TOOL}"]["detail"].endswith("(used by needs-tool)")
        assert f"--image-map {TOOL}=" in failed[f"base image {TOOL}"]["fix"]
        assert "https from containers" in [c["name"] for c in report["checks"]]  # the TLS line, after the failures
        # What the tasks whose images are there run as is still stated.
        assert any(s.startswith("debian:bookworm-slim → Debian bookworm") for s in report["substitutions"]["fine"]), report
    text = run_cli("doctor", "--fix", "--tasks", str(ghcr), "--tasks", str(tool), timeout=600)
    assert text.returncode == 1
    for image in (GHCR, "golang:1.99", TOOL):
        assert f"base image {image}:" in text.stderr
