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
def test_doctor_fix_changes_nothing_on_a_healthy_host(sandbox):
    first = run_cli("doctor", "--json", "--tasks", str(ROOT / "examples" / "seeds"))
    assert first.returncode == 0, first.stderr
    second = run_cli("doctor", "--fix", "--json", "--tasks", str(FIXTURES / "runtime"))
    report = json.loads(second.stdout)
    assert report["ok"] is True
    # HTTPS from containers may only warn (a TLS-intercepting proxy); --fix never trusts its CA by itself.
    assert all(c["status"] == "ok" or (c["name"] == "https from containers" and c["status"] == "warn")
               for c in report["checks"]), report
    assert "substitutions" in report
