"""Stand-ins for unpullable base images: reference parsing, suite choice, naming, the image budget's
selection, and (sandbox) a python stand-in that behaves like the official image."""

from __future__ import annotations

import subprocess
import time
import zipfile

import pytest

from envevo.sandbox import (
    LocalImage,
    choose_python_suite,
    dockerfile_bases,
    parse_ref,
    plan_standin,
    select_prune,
    ubuntu_suite,
)
from envevo.sandbox._standins import StandinEntry, why_no_standin

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("ref", "registry", "repository", "tag", "digest", "standard"),
    [
        (f"public.ecr.aws/docker/library/debian:bookworm-slim@{DIGEST}", "public.ecr.aws", "docker/library/debian",
         "bookworm-slim", DIGEST, "docker.io/library/debian:bookworm-slim"),
        ("docker.io/library/python:3.12-slim", "docker.io", "library/python", "3.12-slim", None,
         "docker.io/library/python:3.12-slim"),
        ("ghcr.io/org/img:tag", "ghcr.io", "org/img", "tag", None, "ghcr.io/org/img:tag"),
        ("ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", None, "docker.io/library/ubuntu:24.04"),
        ("ubuntu", "docker.io", "library/ubuntu", None, None, "docker.io/library/ubuntu:latest"),
        ("localhost:5000/team/x", "localhost:5000", "team/x", None, None, "localhost:5000/team/x:latest"),
        ("org/tool:1", "docker.io", "org/tool", "1", None, "docker.io/org/tool:1"),
        (f"debian@{DIGEST}", "docker.io", "library/debian", None, DIGEST, "docker.io/library/debian:latest"),
    ],
)
def test_parse_ref(ref, registry, repository, tag, digest, standard):
    r = parse_ref(ref)
    assert (r.registry, r.repository, r.tag, r.digest, r.standard) == (registry, repository, tag, digest, standard)


@pytest.mark.parametrize("bad", ["", "a b", "${BASE}", "python:", "debian@sha256:xyz", "UPPER/case:1"])
def test_parse_ref_rejects_non_references(bad):
    with pytest.raises(ValueError):
        parse_ref(bad)


def test_dockerfile_bases_handles_crlf_platform_stages_and_arg_defaults():
    text = (
        "ARG BASE=python:3.12-slim\r\n"
        "ARG TAG\r\n"
        "FROM --platform=linux/amd64 ${BASE} AS build\r\n"
        "ARG BASE=ignored:1\r\n"
        "FROM build\r\n"
        "FROM ubuntu:${TAG:-24.04} as final\r\n"
        "FROM scratch\r\n"
        "FROM $TAG\r\n"
    )
    assert dockerfile_bases(text) == ["python:3.12-slim", "ubuntu:24.04"]


@pytest.mark.parametrize(
    ("version", "tag_suite", "suite", "note"),
    [
        ("3.12", None, "trixie", "Python 3.12 is not packaged"),
        ("3.13", None, "trixie", None),
        ("3.11", None, "bookworm", None),
        ("3.10", None, "bookworm", "Python 3.10 is not packaged"),
        (None, None, "trixie", None),
        ("3.13", "bookworm", "trixie", "tag names bookworm, but bookworm ships Python 3.11"),
        ("3.11", "trixie", "bookworm", "trixie ships Python 3.13"),
        ("3.11", "bookworm", "bookworm", None),
        ("3.12", "bookworm", "trixie", "tag names bookworm"),
        ("3.9", "bullseye", "bookworm", "bullseye is not built here"),
        (None, "bookworm", "bookworm", None),
    ],
)
def test_python_suite_choice(version, tag_suite, suite, note):
    got, notes = choose_python_suite(version, tag_suite)
    assert got == suite
    if note is None:
        assert notes == []
    else:
        assert any(note in n for n in notes), notes


def test_python_2_cannot_be_stood_in():
    with pytest.raises(ValueError):
        choose_python_suite("2.7")


@pytest.mark.parametrize(
    ("ref", "kind", "suite", "variant", "tag"),
    [
        ("python:3.12-slim", "python", "trixie", "slim", "docker.io/library/python:3.12-slim"),
        ("python:3.13-slim-bookworm", "python", "trixie", "slim", "docker.io/library/python:3.13-slim-bookworm"),
        ("python:3.11", "python", "bookworm", "full", "docker.io/library/python:3.11"),
        ("python:3.11-bookworm", "python", "bookworm", "full", "docker.io/library/python:3.11-bookworm"),
        ("python", "python", "trixie", "full", "docker.io/library/python:latest"),
        ("ubuntu:24.04", "ubuntu", "trixie", "slim", "docker.io/library/ubuntu:24.04"),
        ("ubuntu:22.04", "ubuntu", "bookworm", "slim", "docker.io/library/ubuntu:22.04"),
        ("ubuntu:jammy", "ubuntu", "bookworm", "slim", "docker.io/library/ubuntu:jammy"),
        (f"public.ecr.aws/docker/library/debian:bookworm-slim@{DIGEST}", "debian", "bookworm", "slim",
         "docker.io/library/debian:bookworm-slim"),
        ("debian:12", "debian", "bookworm", "slim", "docker.io/library/debian:12"),
        ("debian:trixie", "debian", "trixie", "slim", "docker.io/library/debian:trixie"),
    ],
)
def test_standin_plans_and_names(ref, kind, suite, variant, tag):
    plan = plan_standin(ref)
    assert plan is not None
    assert (plan.kind, plan.suite, plan.variant, plan.tag) == (kind, suite, variant, tag)
    if kind != "debian":
        assert plan.build_tag == f"localhost/envevo-standin:{kind}-{suite}-{variant}"
    assert plan.label().startswith(tag.removeprefix("docker.io/library/") + " → Debian " + suite)


@pytest.mark.parametrize("ref", ["python:3.12-alpine", "python:3.12-alpine3.20", "ghcr.io/org/img:tag", "node:20-alpine",
                                 "golang:1.22-alpine3.20", "ubuntu:devel-x", "ghcr.io/laude-institute/t-bench/deveval:1"])
def test_no_standin_says_why(ref):
    assert plan_standin(ref) is None
    assert ref.split(":")[0].split("/")[-1] in why_no_standin(ref) or "no local stand-in" in why_no_standin(ref)


# ---- Terminal-Bench bases, Go, Node.js, uv ------------------------------------------------------

TB_PY = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
TB_UBUNTU = "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624"


@pytest.mark.parametrize(
    ("ref", "kind", "suite", "build_tag", "note"),
    [
        (TB_PY, "tbench-python", "trixie", "tbench-python-trixie", "python:3.13-slim-bookworm plus tmux and asciinema"),
        (TB_UBUNTU, "tbench-ubuntu", "trixie", "tbench-ubuntu-trixie", "ubuntu:24.04 plus tmux and asciinema"),
        ("ghcr.io/laude-institute/t-bench/python-3-13:latest", "tbench-python", "trixie", "tbench-python-trixie", None),
        ("golang:1.22", "golang", "trixie", "golang-trixie", "Go 1.22 asked for; Debian trixie packages 1.24"),
        ("golang:1.24", "golang", "trixie", "golang-trixie", "no gcc: cgo is off"),
        ("golang:1.24.2-bookworm", "golang", "trixie", "golang-trixie", "bookworm packages Go 1.19"),
        ("golang:1.19-bookworm", "golang", "bookworm", "golang-bookworm", None),
        ("golang", "golang", "trixie", "golang-trixie", "pins no version"),
        (f"public.ecr.aws/docker/library/golang:1.23@{DIGEST}", "golang", "trixie", "golang-trixie", "Go 1.23 asked for"),
        ("node:20", "node", "trixie", "node-trixie", None),
        ("node:20-slim", "node", "trixie", "node-trixie", None),
        ("node:20.11-bookworm-slim", "node", "trixie", "node-trixie", "bookworm packages Node.js 18.20"),
        ("node:18", "node", "bookworm", "node-bookworm", None),
        ("node:iron", "node", "trixie", "node-trixie", None),
        ("node:lts-slim", "node", "trixie", "node-trixie", "pins no version; Debian trixie packages Node.js 20.19"),
        ("ghcr.io/astral-sh/uv:0.9.26", "uv", "", "ghcr.io/astral-sh/uv:0.9.26", None),
        ("ghcr.io/astral-sh/uv:0.9", "uv", "", "ghcr.io/astral-sh/uv:0.9", "newest uv 0.9.x release"),
        ("ghcr.io/astral-sh/uv", "uv", "", "ghcr.io/astral-sh/uv:latest", "newest uv release"),
    ],
)
def test_toolchain_and_tbench_plans(ref, kind, suite, build_tag, note):
    plan = plan_standin(ref)
    assert plan is not None, why_no_standin(ref)
    assert (plan.kind, plan.suite) == (kind, suite)
    assert plan.build_tag.removeprefix("localhost/envevo-standin:") == build_tag
    assert plan.needs_debian == (kind != "uv")
    if note is not None:
        assert any(note in n for n in plan.notes), plan.notes


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("golang:1.25", "asks for Go 1.25, newer than Debian packages (Go 1.24 in trixie)"),
        ("golang:1.26.1-bookworm", "asks for Go 1.26.1"),
        ("node:22", "asks for Node.js 22, newer than Debian packages (Node.js 20.19 in trixie)"),
        ("node:jod-slim", "asks for Node.js 22"),
        ("node:20.21", "asks for Node.js 20.21"),
        ("golang:1.22rc1", "'rc1' in the tag is neither a version nor a Debian suite"),
        ("ghcr.io/astral-sh/uv:0.9.26-python3.12-bookworm-slim", "only the distroless ghcr.io/astral-sh/uv:<version>"),
        (f"ghcr.io/astral-sh/uv@{DIGEST}", "names no uv version"),
    ],
)
def test_a_newer_toolchain_than_debian_has_is_refused_with_the_reason(ref, why):
    assert plan_standin(ref) is None
    assert why in why_no_standin(ref)


def test_toolchain_recipes_behave_like_the_official_images():
    from envevo.sandbox._standins import containerfile
    from envevo.sandbox._standins_toolchains import UV_CONTAINERFILE

    go = containerfile(plan_standin("golang:1.22"))
    assert "golang-go" in go and "--no-install-recommends" in go and "GOTOOLCHAIN=local" in go and "/usr/local/go" in go
    node = containerfile(plan_standin("node:20"))
    assert "nodejs npm" in node and "useradd -m -u 1000 -s /bin/bash node" in node
    tb = containerfile(plan_standin(TB_PY))
    assert tb.startswith("FROM localhost/envevo-standin:python-trixie-slim\n") and "tmux asciinema" in tb
    assert "WORKDIR /app" in tb
    assert containerfile(plan_standin(TB_UBUNTU)).startswith("FROM localhost/envevo-standin:ubuntu-trixie-slim\n")
    assert UV_CONTAINERFILE.startswith("FROM scratch\nCOPY uv uvx /\n")


def test_uv_release_and_wheel_choice_without_network():
    from envevo.errors import UserError
    from envevo.sandbox._standins_toolchains import uv_release, uv_wheel

    def files(v):
        return [{"packagetype": "bdist_wheel", "filename": f"uv-{v}-py3-none-{tag}.whl", "url": f"https://x/uv-{v}-{tag}.whl",
                 "digests": {"sha256": f"{v}-{tag}"}}
                for tag in ("manylinux_2_17_x86_64.manylinux2014_x86_64", "musllinux_1_1_x86_64", "musllinux_1_1_aarch64")]

    releases = {v: files(v) for v in ("0.8.22", "0.9.2", "0.9.10", "0.9.26", "0.10.0rc1")}
    assert uv_release("0.9.26", releases) == "0.9.26"
    assert uv_release("0.9", releases) == "0.9.26"
    assert uv_release("", releases) == "0.9.26"  # pre-releases are not "latest"
    with pytest.raises(UserError, match="no uv release 0.7.x"):
        uv_release("0.7", releases)
    assert uv_wheel("0.9.10", releases, machine="x86_64")["sha256"] == "0.9.10-musllinux_1_1_x86_64"
    assert uv_wheel("0.9.10", releases, machine="arm64")["filename"].endswith("musllinux_1_1_aarch64.whl")
    with pytest.raises(UserError, match="not on PyPI"):
        uv_wheel("0.9.99", releases)


def test_tbench_statement_says_what_the_image_really_is():
    plan = plan_standin(TB_PY)
    entry = StandinEntry(tag=plan.tag, source=TB_PY, became="Debian trixie, Python 3.13.5, tmux 3.5a, asciinema 2.4.0",
                         notes=plan.notes, image_id="x", kind=plan.kind, suite=plan.suite)
    assert entry.statement(TB_PY) == (
        f"{TB_PY} → Debian trixie, Python 3.13.5, tmux 3.5a, asciinema 2.4.0 (Terminal-Bench's image is "
        "python:3.13-slim-bookworm plus tmux and asciinema; rebuilt here on Debian trixie)")


def test_ubuntu_unknown_release_uses_release_year():
    assert ubuntu_suite("23.10")[0] == "bookworm"
    assert ubuntu_suite("28.04")[0] == "trixie"
    assert ubuntu_suite("devel") is None


def test_statement_names_what_the_image_really_is():
    entry = StandinEntry(tag="docker.io/library/python:3.12-slim", source="python:3.12-slim",
                         became="Debian trixie, Python 3.13.5", notes=["Python 3.12 is not packaged in Debian; nearest is 3.13"],
                         image_id="x", kind="python", suite="trixie")
    assert entry.statement() == "python:3.12-slim → Debian trixie, Python 3.13.5 (Python 3.12 is not packaged in Debian; nearest is 3.13)"
    pinned = entry.statement(f"python:3.12-slim@{DIGEST}")
    assert pinned.startswith(f"python:3.12-slim@{DIGEST} → Debian trixie, Python 3.13.5") and "not verified" in pinned


def _img(i, age_days, gb, names=None, **kw):
    now = 1_000_000_000.0
    return LocalImage(id=f"id{i}", names=names if names is not None else [f"localhost/envevo-cache:{i}"],
                      created=now - age_days * 86400, size=int(gb * 1024**3), **kw)


def test_prune_selection_oldest_cache_first_under_a_budget():
    now = 1_000_000_000.0
    images = [
        _img(1, 1, 1.0), _img(2, 10, 1.0), _img(3, 5, 1.0),
        _img(4, 30, 5.0, names=["docker.io/library/python:3.12-slim"], labels={"envevo.standin": "x"}),
        _img(5, 30, 5.0, names=["docker.io/library/debian:bookworm-slim"]),
        _img(6, 2, 0.5, names=[]),  # dangling, old enough
        _img(7, 0.001, 0.5, names=[]),  # dangling, maybe a build in progress
        _img(8, 40, 1.0, containers=1),  # in use
        _img(9, 40, 1.0, names=["localhost/x:1"], labels={"envevo.cache": "1"}),
    ]
    used = int(16 * 1024**3)
    chosen = select_prune(images, now=now, used_bytes=used, max_bytes=int(13.4 * 1024**3))
    assert [i.id for i in chosen] == ["id6", "id9", "id2", "id3"]  # dangling, then oldest cache first
    assert [i.id for i in select_prune(images, now=now, used_bytes=used, older_than_days=7)] == ["id6", "id9", "id2"]
    assert {i.id for i in select_prune(images, now=now, used_bytes=used, all_cache=True)} == {"id6", "id9", "id2", "id3", "id1"}
    assert "id4" in {i.id for i in select_prune(images, now=now, used_bytes=used, all_cache=True, include_standins=True)}
    assert [i.id for i in select_prune(images, now=now, used_bytes=used, max_bytes=100 * 1024**3)] == ["id6"]


def test_cache_image_built_from_a_standin_is_still_cache():
    img = LocalImage(id="c", names=["localhost/envevo-cache:abc"], labels={"envevo.standin": "inherited"})
    assert img.cache and not img.standin


# ---- in containers ------------------------------------------------------------------------------

@pytest.mark.sandbox
def test_python_standin_behaves_like_the_official_image(sandbox, tmp_path, monkeypatch):
    from envevo.sandbox import ensure_standin, standins_for
    from envevo.task import load_task

    monkeypatch.setenv("ENVEVO_HOME", str(tmp_path / "home"))
    entry = ensure_standin(sandbox, "python:3.13-slim")
    assert entry.became.startswith("Debian trixie, Python 3.13.")
    labels = subprocess.run([sandbox, "image", "inspect", "--format", "{{index .Config.Labels \"envevo.standin\"}}", entry.tag],
                            capture_output=True, text=True).stdout.strip()
    assert labels == f"python:3.13-slim → {entry.became}"

    pkg = tmp_path / "pkg"  # a local wheel: no network, and no setuptools needed (3.12+ images have none)
    pkg.mkdir()
    with zipfile.ZipFile(pkg / "hello_envevo-1.0-py3-none-any.whl", "w") as whl:
        whl.writestr("hello_envevo/__init__.py", "VALUE = 42\n")
        whl.writestr("hello_envevo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: hello-envevo\nVersion: 1.0\n")
        whl.writestr("hello_envevo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr("hello_envevo-1.0.dist-info/RECORD", "")
    script = (
        "set -e; python --version; pip --version; python -m venv /tmp/v; /tmp/v/bin/python -c 'import sys; print(sys.prefix)';"
        " pip install -q --no-index /pkg/hello_envevo-1.0-py3-none-any.whl;"
        " cd /; python -c 'import hello_envevo; print(hello_envevo.VALUE, hello_envevo.__file__)'"
    )
    t0 = time.monotonic()
    proc = subprocess.run([sandbox, "run", "--rm", "--network=none", "-v", f"{pkg}:/pkg:ro", entry.tag, "bash", "-c", script],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Python 3.13.")
    assert lines[1].startswith("pip ") and "/usr/local/lib/python3.13/dist-packages/pip" in lines[1]
    assert lines[2] == "/tmp/v"
    assert lines[3].startswith("42 /usr/local/lib/python3.13/dist-packages/hello_envevo")
    assert time.monotonic() - t0 < 300

    # A task pinning the image by digest and mirror maps to the stand-in, stated.
    task_dir = tmp_path / "task"
    (task_dir / "environment").mkdir(parents=True)
    (task_dir / "environment" / "Dockerfile").write_text(f"FROM public.ecr.aws/docker/library/python:3.13-slim@{DIGEST}\r\n")
    (task_dir / "instruction.md").write_text("x\n")
    (task_dir / "tests").mkdir()
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    mapping, lines = standins_for(load_task(task_dir), sandbox)
    assert mapping.lookup(f"public.ecr.aws/docker/library/python:3.13-slim@{DIGEST}") == "docker.io/library/python:3.13-slim"
    assert lines and lines[0].startswith(f"public.ecr.aws/docker/library/python:3.13-slim@{DIGEST} → Debian trixie, Python 3.13.")


def test_ensure_standin_refuses_a_newer_toolchain_before_any_build():
    from envevo.errors import UserError
    from envevo.sandbox import ensure_standin

    with pytest.raises(UserError, match=r"cannot stand in for golang:1\.25: .*Go 1\.24 in trixie"):
        ensure_standin("/nonexistent/podman", "golang:1.25")


@pytest.mark.sandbox
def test_toolchain_tbench_and_uv_standins_are_what_they_say(sandbox, tmp_path, monkeypatch):
    """Reuses the stand-ins `envevo doctor --fix --tasks tests/fixtures/realistic` builds (golang, Terminal-Bench python,
    uv); on a fresh store it builds them (about 3 min)."""
    from envevo.sandbox import ensure_standin

    monkeypatch.setenv("ENVEVO_HOME", str(tmp_path / "home"))
    go = ensure_standin(sandbox, "golang:1.22")
    assert go.became.startswith("Debian trixie, Go 1.24."), go.became
    assert go.statement("golang:1.22").endswith("(Go 1.22 asked for; Debian trixie packages 1.24; no gcc: cgo is off)")
    tb = ensure_standin(sandbox, TB_PY)
    assert tb.became.startswith("Debian trixie, Python 3.13.") and ", tmux 3." in tb.became and ", asciinema 2." in tb.became
    uv = ensure_standin(sandbox, "ghcr.io/astral-sh/uv:0.9.26")
    assert uv.became.startswith("uv 0.9.26 (/uv, /uvx from PyPI's uv-0.9.26-py3-none-musllinux"), uv.became

    def run(image, script):
        proc = subprocess.run([sandbox, "run", "--rm", "--network=none", image, "sh", "-c", script],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr + proc.stdout
        return proc.stdout.split()

    out = run("golang:1.22", "go version; go env GOTOOLCHAIN GOPATH; echo $GOLANG_VERSION; test -x /usr/local/go/bin/go && echo linked")
    assert out[2].startswith("go1.24.") and out[4:] == ["local", "/go", out[2].removeprefix("go"), "linked"], out
    out = run(TB_PY, "pwd; tmux -V; python --version; pip --version")
    assert out[:2] == ["/app", "tmux"] and out[3:5] == ["Python", out[4]] and out[4].startswith("3.13."), out

    ctx = tmp_path / "ctx"  # a task's way of using it: COPY --from the image, multi-stage, stage name not pulled
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM docker.io/library/debian:trixie-slim AS base\n"
                                    "COPY --from=ghcr.io/astral-sh/uv:0.9.26 /uv /uvx /bin/\n"
                                    "FROM base\nCOPY --from=base /bin/uv /usr/local/bin/uv\n"
                                    "RUN uv --version && uvx --version && /usr/local/bin/uv --version\n")
    tag = f"localhost/envevo-test-uv-copy:{tmp_path.name.lower()}"
    try:
        proc = subprocess.run([sandbox, "build", "-t", tag, str(ctx)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "uv 0.9.26" in proc.stdout and "uvx 0.9.26" in proc.stdout
    finally:
        subprocess.run([sandbox, "rmi", "-f", tag], capture_output=True)
