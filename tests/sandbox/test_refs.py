"""Which images a Dockerfile needs: FROM bases, `COPY --from=<image>` and `RUN --mount=…,from=<image>`, never the
names of its own build stages (no containers)."""

import pytest

from envevo.sandbox import dockerfile_bases, dockerfile_images, image_users, images_by_task
from envevo.sandbox._refs import dockerfile_image_uses

UV = "ghcr.io/astral-sh/uv:0.9.26"


def test_copy_from_an_image_is_an_image_and_a_stage_name_is_not():
    text = (
        "FROM python:3.13-slim AS base\n"
        f"COPY --from={UV} /uv /uvx /bin/\n"
        "FROM base\n"
        "COPY --from=base /bin/uv /usr/local/bin/uv\n"
        "COPY --from=0 /etc/hostname /tmp/\n"
    )
    assert dockerfile_images(text) == ["python:3.13-slim", UV]
    assert dockerfile_bases(text) == ["python:3.13-slim"]
    assert dockerfile_image_uses(text) == [("python:3.13-slim", "FROM"), (UV, "COPY --from")]


def test_stage_names_are_case_insensitive_and_only_count_once_defined():
    text = (
        "FROM golang:1.22 as Build\n"
        "RUN go build -o /out/app .\n"
        "FROM debian:bookworm-slim\n"
        "COPY --from=build /out/app /usr/local/bin/app\n"
        "COPY --from=BUILD /out/app /app2\n"
    )
    assert dockerfile_images(text) == ["golang:1.22", "debian:bookworm-slim"]


@pytest.mark.parametrize(("line", "image"), [
    (f"COPY --chown=1000:1000 --from={UV} /uv /bin/uv", UV),
    (f"COPY --link --from={UV} /uv /bin/uv", UV),
    (f'COPY --from="{UV}" /uv /bin/uv', UV),
    (f"copy --from={UV} /uv /bin/uv", UV),
    ("COPY --from=${UV_IMAGE} /uv /bin/", UV),  # a global ARG default
    (f"COPY --from={UV}@sha256:{'ab' * 32} /uv /bin/", f"{UV}@sha256:{'ab' * 32}"),
    (f"RUN --mount=type=bind,from={UV},source=/uv,target=/bin/uv uv pip install --system x", UV),
    (f"RUN --mount=from={UV},source=/uv,target=/bin/uv --mount=type=cache,target=/root/.cache uv --version", UV),
    (f"COPY --from={UV} \\\n    /uv /uvx /bin/", UV),  # a continued line
])
def test_copy_from_spellings(line, image):
    text = f"ARG UV_IMAGE={UV}\nFROM debian:bookworm-slim\n{line}\n"
    assert dockerfile_images(text) == ["debian:bookworm-slim", image]


def test_crlf_and_unresolvable_copy_from():
    text = f"FROM debian:bookworm-slim\r\nCOPY --from=$NOPE /x /y\r\nCOPY --from={UV} /uv /bin/\r\n"
    assert dockerfile_images(text) == ["debian:bookworm-slim", UV]


def test_tasks_name_their_images_and_each_image_its_tasks(tmp_path):
    for name, dockerfile in {
        "a": f"FROM python:3.13-slim AS base\nCOPY --from={UV} /uv /bin/\nFROM base\n",
        "b": "FROM golang:1.22\n",
        "c": f"FROM golang:1.22 AS build\nFROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
             f"COPY --from=build /go/bin /usr/local/bin\nRUN --mount=from={UV},source=/uv,target=/bin/uv uv --version\n",
    }.items():
        (tmp_path / name / "environment").mkdir(parents=True)
        (tmp_path / name / "environment" / "Dockerfile").write_text(dockerfile)
        (tmp_path / name / "instruction.md").write_text("x\n")
    assert images_by_task([tmp_path]) == {
        "a": ["python:3.13-slim", UV],
        "b": ["golang:1.22"],
        "c": ["golang:1.22", "ghcr.io/laude-institute/t-bench/python-3-13:20250620", UV],
    }
    users = image_users([tmp_path])
    assert users[UV] == ["a", "c"] and users["golang:1.22"] == ["b", "c"]


def test_heredoc_bodies_are_not_instructions(tmp_path):
    """Issue 36: `from cryptography.hazmat.backends import …` in a `RUN python - <<EOF` body is no FROM."""
    dockerfile = ("FROM python:3.12-slim\nRUN pip install cryptography && python - <<EOF\n"
                  "from cryptography.hazmat.backends import default_backend\nfrom os import path\nEOF\n"
                  "COPY <<-'X' /etc/x\n\tFROM debian:12\n\tX\nRUN echo done\nFROM debian:bookworm-slim AS two\n")
    assert dockerfile_images(dockerfile) == ["python:3.12-slim", "debian:bookworm-slim"]
    (tmp_path / "t" / "environment").mkdir(parents=True)
    (tmp_path / "t" / "environment" / "Dockerfile").write_text(dockerfile)
    (tmp_path / "t" / "instruction.md").write_text("x\n")
    assert images_by_task([tmp_path]) == {"t": ["python:3.12-slim", "debian:bookworm-slim"]}


def test_a_compose_service_that_builds_its_image_is_no_base(tmp_path):
    """Issue 36: `image:` beside `build:` names the tag the build gets; only a service without `build:` pulls."""
    env = tmp_path / "t" / "environment"
    env.mkdir(parents=True)
    (env / "Dockerfile").write_text("FROM python:3.12-slim\n")
    (env / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build:\n      context: .\n    image: hello-world-app:latest\n"
        "  api:\n    build: .\n    image: 'local/api'\n  db:\n    image: postgres:16\n")
    (tmp_path / "t" / "instruction.md").write_text("x\n")
    (tmp_path / "t" / "tests").mkdir()
    (tmp_path / "t" / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    assert images_by_task([tmp_path]) == {"t": ["python:3.12-slim", "postgres:16"]}
