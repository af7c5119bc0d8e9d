"""What a task runs as on this host, before any trial: Harbor's schema fixes and BuildKit heredocs, each stated."""

import pytest

from envevo.errors import TaskError
from envevo.sandbox import _preflight, harbor_ready
from envevo.task import load_task
from tests.conftest import FIXTURES

REALISTIC = FIXTURES / "realistic"


@pytest.fixture
def podman(monkeypatch):
    def at(version):
        monkeypatch.setattr(_preflight, "engine_version", lambda engine: version)
    return at


def test_heredocs_are_rewritten_for_podman_4_and_stated(podman):
    podman((4, 3, 1))
    task = load_task(REALISTIC / "heredoc")
    ready, stated = harbor_ready(task, "podman")
    assert stated == ["rewrote 4 BuildKit heredocs for podman 4.3 (its builder does not know them)"]
    assert "<<" not in ready.files["environment/Dockerfile"].data.decode().split("COPY <<", 1)[0].split("RUN [")[0]
    assert "environment/envevo-heredoc/0/EOF" in ready.files
    assert task.files["environment/Dockerfile"].data.count(b"<<") == 4  # the user's task is untouched


@pytest.mark.parametrize(("engine", "version"), [("podman", (5, 0, 0)), ("docker", None)])
def test_builders_that_know_heredocs_get_the_dockerfile_as_written(podman, engine, version):
    podman(version)
    task = load_task(REALISTIC / "heredoc")
    ready, stated = harbor_ready(task, engine)
    assert stated == [] and ready.files == task.files


def test_a_plain_task_name_runs_as_local_slash_name(podman):
    podman((5, 0, 0))
    task = load_task(REALISTIC / "plain-name")
    ready, stated = harbor_ready(task, "podman")
    assert ready.config["task"]["name"] == "local/plain-name" and task.name == "plain-name"
    assert stated == ['[task] name "plain-name" → "local/plain-name" (Harbor 0.26 asks for org/name)']
    assert 'name = "local/plain-name"' in ready.config_toml()


def test_a_problem_no_fix_covers_is_named_before_any_trial(podman, tmp_path):
    podman((5, 0, 0))
    task = load_task(REALISTIC / "plain-name")
    task.config["environment"]["cpus"] = "two"
    task.config_text = None
    with pytest.raises(TaskError) as exc:
        harbor_ready(task, "podman")
    message = str(exc.value)
    assert "Harbor would reject this task (1 problem(s))" in message
    assert "task.toml environment.cpus: Input should be a valid integer" in message and "fix: set environment.cpus" in message
