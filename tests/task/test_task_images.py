"""Image map for air-gapped hosts: rewrite images in a copy, never in the user's files."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from envevo.errors import TaskError
from envevo.task import (
    ImageMap,
    dir_hash,
    image_map_from_file,
    image_map_from_specs,
    load_image_map,
    load_task,
    materialize,
    parse_image_spec,
    prepare_runnable,
    rewrite_compose,
    rewrite_dockerfile,
    task_images,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"
MAP = ImageMap(
    images={
        "ubuntu:24.04": "registry.local/ubuntu:24.04",
        "python:3.12-slim": "registry.local/python:3.12-slim",
        "ghcr.io/astral-sh/uv:0.5.0": "registry.local/uv:0.5.0",
        "postgres:16": "registry.local/postgres:16",
        "debian:bookworm-slim": "registry.local/debian:bookworm-slim",
    }
)


def test_parse_spec() -> None:
    assert parse_image_spec("ubuntu:24.04=registry.local/ubuntu:24.04") == ("ubuntu:24.04", "registry.local/ubuntu:24.04")
    assert parse_image_spec(" a = b ") == ("a", "b")


@pytest.mark.parametrize("spec", ["ubuntu:24.04", "=x", "x=", "a=b=c", "a b=c", "a=b c", "", '"a"=b'])
def test_invalid_spec_is_a_task_error(spec: str) -> None:
    with pytest.raises(TaskError) as info:
        parse_image_spec(spec)
    assert "SOURCE=TARGET" in str(info.value) or "invalid image name" in str(info.value)


def test_later_specs_win() -> None:
    m = image_map_from_specs(["a=b", "a=c"])
    assert m.lookup("a") == "c"


def test_docker_hub_spellings_match() -> None:
    m = image_map_from_specs(["ubuntu=mirror/ubuntu:latest", "docker.io/library/debian:12=mirror/debian:12"])
    assert m.lookup("ubuntu:latest") == "mirror/ubuntu:latest"
    assert m.lookup("docker.io/library/ubuntu") == "mirror/ubuntu:latest"
    assert m.lookup("debian:12") == "mirror/debian:12"
    assert m.lookup("ubuntu:24.04") is None
    assert m.lookup("localhost:5000/ubuntu") is None


def test_config_file_images_table_and_spec_override(tmp_path: Path) -> None:
    cfg = tmp_path / "envevo.toml"
    cfg.write_text('[images]\n"ubuntu:24.04" = "registry.local/ubuntu:24.04"\n"debian:12" = "registry.local/debian:12"\n\n[other]\nx = 1\n')
    assert image_map_from_file(cfg).lookup("ubuntu:24.04") == "registry.local/ubuntu:24.04"
    merged = load_image_map(["debian:12=elsewhere/debian:12"], cfg)
    assert merged.lookup("debian:12") == "elsewhere/debian:12"
    assert merged.lookup("ubuntu:24.04") == "registry.local/ubuntu:24.04"


def test_default_config_file_is_used_when_present(tmp_path: Path) -> None:
    cfg = tmp_path / "envevo.toml"
    cfg.write_text('[images]\n"a:1" = "b:1"\n')
    assert load_image_map([], None, default_config=cfg).lookup("a:1") == "b:1"
    assert not load_image_map([], None, default_config=tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[images]\n"a" = 1\n', "must map to an image name string"),
        ('images = "x"\n', "[images] must be a table"),
        ('[images]\n"a" = "b c"\n', "invalid image name"),
        ("[images\n", "line 1"),
    ],
)
def test_bad_config_file(tmp_path: Path, text: str, expected: str) -> None:
    cfg = tmp_path / "envevo.toml"
    cfg.write_text(text)
    with pytest.raises(TaskError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        image_map_from_file(cfg)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_image_map([], tmp_path / "nope.toml")


def test_dockerfile_rewrite_covers_from_forms_and_leaves_stages_alone() -> None:
    src = (
        "ARG BASE=ubuntu:24.04\n"
        "FROM ${BASE}\n"
        "FROM --platform=linux/amd64 python:3.12-slim AS builder\n"
        "from ubuntu:24.04 as Final  # trailing comment\n"
        "COPY --from=builder /a /a\n"
        "COPY --from=ghcr.io/astral-sh/uv:0.5.0 /uv /bin/uv\n"
        "COPY --chown=1:1 --from=0 /b /b\n"
        "FROM builder\n"
        "FROM unmapped:1\n"
        "RUN echo ubuntu:24.04"
    )
    out = rewrite_dockerfile(src, MAP)
    assert out.splitlines() == [
        "ARG BASE=registry.local/ubuntu:24.04",
        "FROM ${BASE}",
        "FROM --platform=linux/amd64 registry.local/python:3.12-slim AS builder",
        "from registry.local/ubuntu:24.04 as Final  # trailing comment",
        "COPY --from=builder /a /a",
        "COPY --from=registry.local/uv:0.5.0 /uv /bin/uv",
        "COPY --chown=1:1 --from=0 /b /b",
        "FROM builder",
        "FROM unmapped:1",
        "RUN echo ubuntu:24.04",
    ]
    assert not out.endswith("\n")


def test_stage_named_like_an_image_is_not_rewritten() -> None:
    src = "FROM ubuntu:24.04 AS base\nFROM base\nCOPY --from=base /x /x\n"
    m = image_map_from_specs(["ubuntu:24.04=r/ubuntu:24.04", "base=r/base:1"])
    assert rewrite_dockerfile(src, m) == "FROM r/ubuntu:24.04 AS base\nFROM base\nCOPY --from=base /x /x\n"
    assert rewrite_dockerfile("FROM base\n", m) == "FROM r/base:1\n"  # no such stage: it is an image


def test_compose_rewrite_keeps_formatting() -> None:
    src = "services:\n  main:\n    image: ${MAIN_IMAGE_NAME}\n  db:\n    image: \"postgres:16\"  # sidecar\n  cache:\n    image: redis:7\n"
    out = rewrite_compose(src, MAP)
    assert out == src.replace('"postgres:16"', '"registry.local/postgres:16"')


def test_materialize_rewrites_a_copy_and_never_edits_originals(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "harbor-legacy", tmp_path / "src")
    before = dir_hash(src)
    task = load_task(src)
    task_hash = task.content_hash()
    out = materialize(task, MAP)
    try:
        assert out != src and not out.is_relative_to(src)
        dockerfile = (out / "environment" / "Dockerfile").read_text()
        assert "FROM --platform=linux/amd64 registry.local/python:3.12-slim AS base" in dockerfile
        assert "COPY --from=registry.local/uv:0.5.0 /uv /bin/uv" in dockerfile
        assert "FROM base\n" in dockerfile
        assert "image: registry.local/postgres:16  # sidecar" in (out / "environment" / "docker-compose.yaml").read_text()
    finally:
        shutil.rmtree(out.parent)
    assert dir_hash(src) == before
    assert task.content_hash() == task_hash  # the in-memory Task is untouched too


def test_materialize_rewrites_docker_image_settings(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "harbor-image", tmp_path / "src")
    before = (src / "task.toml").read_bytes()
    out = materialize(src, {"ubuntu:24.04": "registry.local/ubuntu:24.04"}, dest=tmp_path / "out")
    assert out == tmp_path / "out"
    assert tomllib.loads((out / "task.toml").read_text())["environment"]["docker_image"] == "registry.local/ubuntu:24.04"
    assert (src / "task.toml").read_bytes() == before


def test_materialize_rewrites_verifier_and_step_images(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "harbor-verifier-env")
    m = image_map_from_specs(["ghcr.io/example/agent-env:1.0=r/agent-env:1.0", "python:3.12-slim=r/python:3.12-slim"])
    out = materialize(task, m, dest=tmp_path / "out")
    assert "FROM r/python:3.12-slim" in (out / "tests" / "Dockerfile").read_text()
    assert tomllib.loads((out / "task.toml").read_text())["environment"]["docker_image"] == "r/agent-env:1.0"


def test_task_images_lists_every_external_image() -> None:
    assert task_images(load_task(FIXTURES / "harbor-legacy")) == ["python:3.12-slim", "ghcr.io/astral-sh/uv:0.5.0", "postgres:16"]
    assert task_images(load_task(FIXTURES / "harbor-image")) == ["ubuntu:24.04"]


def test_prepare_runnable_runs_untouched_harbor_tasks_in_place(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "harbor-basic")
    assert prepare_runnable(task, None, tmp_path / "runs") == FIXTURES / "harbor-basic"
    assert prepare_runnable(task, image_map_from_specs(["nothing:1=else:1"]), tmp_path / "runs") == FIXTURES / "harbor-basic"
    assert not (tmp_path / "runs").exists()


def test_prepare_runnable_copies_mapped_tb1_and_edited_tasks(tmp_path: Path) -> None:
    mapped = prepare_runnable(load_task(FIXTURES / "harbor-basic"), MAP, tmp_path / "runs")
    assert mapped.parent == tmp_path / "runs"
    assert "registry.local/debian:bookworm-slim" in (mapped / "environment" / "Dockerfile").read_text()
    assert prepare_runnable(load_task(FIXTURES / "harbor-basic"), MAP, tmp_path / "runs") == mapped  # reused

    tb1 = prepare_runnable(load_task(FIXTURES / "tb1-basic"), None, tmp_path / "runs")
    assert (tb1 / "task.toml").is_file() and (tb1 / "tests" / "test.sh").is_file()

    edited = load_task(FIXTURES / "harbor-basic")
    edited.write("instruction.md", "Changed.\n")
    path = prepare_runnable(edited, None, tmp_path / "runs")
    assert path != FIXTURES / "harbor-basic" and (path / "instruction.md").read_text() == "Changed.\n"


def test_task_images_resolves_global_arg_defaults_and_crlf() -> None:
    from envevo.task import Task
    from envevo.task._files import TaskFile

    dockerfile = (b"ARG BASE=python:3.12-slim\r\nARG TAG\r\nFROM ${BASE} AS build\r\n"
                  b"FROM ubuntu:${TAG:-24.04}\r\nFROM $TAG\r\nFROM scratch\r\n")
    task = Task(files={"environment/Dockerfile": TaskFile(data=dockerfile), "instruction.md": TaskFile(data=b"x\n")})
    assert task_images(task) == ["python:3.12-slim", "ubuntu:24.04"]
    rewritten = rewrite_dockerfile(dockerfile.decode(), image_map_from_specs(["python:3.12-slim=docker.io/library/python:3.12-slim"]))
    assert rewritten.startswith("ARG BASE=docker.io/library/python:3.12-slim\r\n")  # CRLF kept
