"""Loading every task format envevo accepts: Harbor (any schema version) and Terminal-Bench 1."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from envevo.task import Task, detect_format, dir_hash, load_task, looks_like_task

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"
ALL = ["harbor-basic", "harbor-legacy", "harbor-image", "harbor-multistep", "harbor-verifier-env", "tb1-basic", "tb1-compose"]


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_loads_and_detects_its_format(name: str) -> None:
    task = load_task(FIXTURES / name)
    assert isinstance(task, Task)
    assert task.source_format == ("terminal-bench-1" if name.startswith("tb1") else "harbor")
    assert detect_format(FIXTURES / name) == task.source_format
    assert looks_like_task(FIXTURES / name)
    assert task.config["schema_version"] == "1.4"


@pytest.mark.parametrize("name", ALL)
def test_loading_never_writes_to_the_task_dir(name: str, tmp_path: Path) -> None:
    copy = shutil.copytree(FIXTURES / name, tmp_path / name)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in copy.rglob("*") if p.is_file()}
    load_task(copy)
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in copy.rglob("*") if p.is_file()}
    assert before == after


def test_harbor_task_exposes_instruction_name_and_files() -> None:
    task = load_task(FIXTURES / "harbor-basic")
    assert task.name == "envevo-fixtures/harbor-basic"
    assert "amount" in task.instruction
    assert task.files["tests/test.sh"].executable
    assert not task.files["environment/data/input.csv"].executable
    # binary fixtures outside the text-only files are kept as opaque bytes
    assert task.files["environment/data/blob.bin"].data.startswith(b"\x89PNG")
    assert task.config["environment"]["memory_mb"] == 1024


def test_task_without_name_is_named_after_its_directory() -> None:
    assert load_task(FIXTURES / "harbor-image").name == "harbor-image"


def test_legacy_schema_is_migrated_to_current_fields() -> None:
    task = load_task(FIXTURES / "harbor-legacy")
    env = task.config["environment"]
    assert "version" not in task.config
    assert env["memory_mb"] == 2048 and env["storage_mb"] == 512
    assert env["network_mode"] == "no-network"
    assert not {"memory", "storage", "allow_internet"} & set(env)
    # fields we do not interpret are kept untouched
    assert task.config["metadata"] == {"author_name": "someone"}


def test_prebuilt_image_task_needs_no_environment_dir() -> None:
    task = load_task(FIXTURES / "harbor-image")
    assert task.docker_image == "ubuntu:24.04"
    assert not any(p.startswith("environment/") for p in task.files)


def test_multi_step_task_loads_steps_in_order() -> None:
    task = load_task(FIXTURES / "harbor-multistep")
    assert task.is_multi_step
    assert task.step_names == ["setup", "query"]
    assert task.config["steps"][0]["min_reward"] == 1.0
    text = task.instruction
    assert text.index("SQLite database") < text.index("total qty")


def test_verifier_environment_and_artifacts_survive_loading() -> None:
    task = load_task(FIXTURES / "harbor-verifier-env")
    assert task.config["verifier"]["environment"] == {"cpus": 2, "memory_mb": 2048}
    assert task.config["artifacts"][0] == "/app/report.json"
    assert task.config["artifacts"][1]["exclude"] == ["*.tmp"]
    # its tests live in the verifier image, so tests/test.sh is not required
    assert "tests/test.sh" not in task.files


def test_tb1_task_converts_to_harbor_layout() -> None:
    task = load_task(FIXTURES / "tb1-basic")
    assert task.instruction.startswith("Count the lines")
    assert task.instruction.endswith("\n")
    assert set(task.files) == {
        "instruction.md",
        "environment/Dockerfile",
        "environment/data/words.txt",
        "tests/test.sh",
        "tests/run-tests.sh",
        "tests/test_outputs.py",
        "solution/solve.sh",
    }
    assert task.config["agent"]["timeout_sec"] == 900.0
    assert task.config["verifier"]["timeout_sec"] == 180.0
    meta = task.config["metadata"]
    assert meta["author_name"] == "Fixture Author" and meta["tags"] == ["grep"]
    assert task.envevo_metadata["imported_from"] == "terminal-bench-1"
    assert task.files["solution/solve.sh"].executable and task.files["tests/test.sh"].executable


def test_tb1_test_sh_runs_tb1_tests_and_writes_reward_from_exit_status() -> None:
    task = load_task(FIXTURES / "tb1-basic")
    test_sh = task.read_text("tests/test.sh")
    assert "bash /tests/run-tests.sh" in test_sh
    assert "/logs/verifier/reward.txt" in test_sh
    assert "export TEST_DIR=/tests" in test_sh
    assert task.read_bytes("tests/run-tests.sh") == (FIXTURES / "tb1-basic" / "run-tests.sh").read_bytes()


def test_tb1_boilerplate_compose_collapses_into_the_dockerfile() -> None:
    task = load_task(FIXTURES / "tb1-basic")
    assert "environment/docker-compose.yaml" not in task.files
    dockerfile = task.read_text("environment/Dockerfile")
    assert dockerfile.startswith("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624")
    assert "ENV TEST_DIR=/tests" in dockerfile


def test_tb1_with_sidecar_keeps_a_harbor_compose_and_default_timeouts() -> None:
    import yaml

    task = load_task(FIXTURES / "tb1-compose")
    compose = yaml.safe_load(task.read_text("environment/docker-compose.yaml"))
    assert set(compose["services"]) == {"main", "server"}
    assert compose["services"]["main"]["depends_on"] == ["server"]
    assert compose["services"]["server"]["build"] == "./server"
    assert "T_BENCH" not in task.read_text("environment/docker-compose.yaml")
    assert "environment/server/Dockerfile" in task.files
    assert 'ENV API_URL="http://server:8000"' in task.read_text("environment/Dockerfile")
    # early TB1 layout: descriptions list, no timeouts given -> TB1 defaults
    assert task.instruction.startswith("Fetch the secret")
    assert task.config["agent"]["timeout_sec"] == 360.0
    assert task.config["verifier"]["timeout_sec"] == 60.0


def test_tb1_solution_yaml_becomes_solve_sh_and_missing_run_tests_gets_default() -> None:
    task = load_task(FIXTURES / "tb1-compose")
    solve = task.read_text("solution/solve.sh")
    assert solve.startswith("#!/bin/bash\n")
    assert solve.index("curl -s http://server:8000/secret") < solve.index("cat /app/secret.txt")
    assert "pytest" in task.read_text("tests/run-tests.sh")


def test_tb1_dockerfile_that_copies_tests_keeps_them_in_the_build_context(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "tb1-basic", tmp_path / "t")
    (src / "Dockerfile").write_text("FROM ubuntu:24.04\nCOPY tests /tests\nCOPY ./solution.sh /s.sh\n")
    task = load_task(src)
    assert "environment/tests/test_outputs.py" in task.files
    assert "environment/solution.sh" in task.files
    assert "tests/test_outputs.py" in task.files


def test_internal_symlinks_are_followed(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "harbor-basic", tmp_path / "t")
    (src / "tests" / "data").symlink_to("../environment/data")
    (src / "tests" / "input.csv").symlink_to("../environment/data/input.csv")
    task = load_task(src)
    assert task.files["tests/input.csv"].data == task.files["environment/data/input.csv"].data
    assert task.files["tests/data/blob.bin"].data == task.files["environment/data/blob.bin"].data


def test_junk_files_are_ignored(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "harbor-basic", tmp_path / "t")
    (src / ".DS_Store").write_bytes(b"junk")
    (src / "tests" / "__pycache__").mkdir()
    (src / "tests" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"junk")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    task = load_task(src)
    assert task.content_hash() == load_task(FIXTURES / "harbor-basic").content_hash()
    assert not any("pycache" in p or ".git" in p or "DS_Store" in p for p in task.files)


def test_schema_version_absent_or_old_loads(tmp_path: Path) -> None:
    for header in ("", 'schema_version = "1.0"\n', 'version = "1.1"\n'):
        src = tmp_path / f"t{len(header)}"
        shutil.copytree(FIXTURES / "harbor-image", src)
        (src / "task.toml").write_text(header + (FIXTURES / "harbor-image" / "task.toml").read_text())
        task = load_task(src)
        assert tomllib.loads(task.config_toml())["schema_version"] == "1.4"


def test_dir_hash_of_untouched_current_task_equals_task_hash() -> None:
    assert dir_hash(FIXTURES / "harbor-basic") == load_task(FIXTURES / "harbor-basic").content_hash()


def test_harbor_layout_without_task_toml_loads_with_defaults(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "harbor-basic", tmp_path / "t")
    (src / "task.toml").unlink()
    task = load_task(src)
    assert task.source_format == "harbor" and task.config == {"schema_version": "1.4"}
    assert tomllib.loads(task.config_toml()) == {"schema_version": "1.4"}


def _run_line(dockerfile: str) -> str:
    """The envevo-added RUN instruction with its continuation lines joined, as the builder hands it to sh."""
    start = dockerfile.index("RUN have()")
    body, rest = [], dockerfile[start + len("RUN "):].splitlines()
    for line in rest:
        body.append(line.rstrip("\\").rstrip())
        if not line.endswith("\\"):
            break
    return " ".join(body)


def test_tb1_without_run_tests_installs_pytest_at_build_time() -> None:
    import subprocess

    task = load_task(FIXTURES / "tb1-compose")
    dockerfile = task.read_text("environment/Dockerfile")
    run = _run_line(dockerfile)
    assert "apt-get install" in run and "python3-pytest" in run  # apt over http works in builds
    assert "pip install" in run and "--break-system-packages" in run  # the PyPI fallback
    assert run.rstrip().endswith("exit 0")  # an image that cannot get pytest still builds
    assert subprocess.run(["sh", "-n", "-c", run]).returncode == 0
    # the runner finds the build's pytest first; installing at test time is only the last resort
    runner = task.read_text("tests/run-tests.sh")
    assert runner.index("python3 -m pytest --version") < runner.index("pip install")
    assert "pytest-3" in runner and subprocess.run(["bash", "-n", "-c", runner]).returncode == 0


def test_tb1_with_its_own_run_tests_gets_no_build_time_install() -> None:
    assert "pytest" not in load_task(FIXTURES / "tb1-basic").read_text("environment/Dockerfile")


def test_tb1_pytest_install_runs_as_root_and_restores_the_user(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "tb1-compose", tmp_path / "t")
    (src / "Dockerfile").write_text("FROM python:3.12-slim AS build\nUSER builder\nFROM python:3.12-slim\nUSER app\nWORKDIR /app\n")
    dockerfile = load_task(src).read_text("environment/Dockerfile")
    assert dockerfile.index("USER root") < dockerfile.index("RUN have()") < dockerfile.rindex("USER app")
    (src / "Dockerfile").write_text("FROM python:3.12-slim AS build\nUSER builder\nFROM python:3.12-slim\n")
    assert "USER root" not in load_task(src).read_text("environment/Dockerfile")


def test_tb1_prebuilt_image_without_run_tests_gets_a_dockerfile(tmp_path: Path) -> None:
    src = shutil.copytree(FIXTURES / "tb1-compose", tmp_path / "t")
    (src / "Dockerfile").unlink()
    compose = (src / "docker-compose.yaml").read_text()
    (src / "docker-compose.yaml").write_text(
        compose.replace("    build:\n      context: .\n      dockerfile: Dockerfile\n    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}\n",
                        "    image: python:3.12-slim\n"))
    task = load_task(src)
    assert task.read_text("environment/Dockerfile").startswith("FROM python:3.12-slim\n")
    assert "python3-pytest" in task.read_text("environment/Dockerfile")
    assert "docker_image" not in task.config.get("environment", {})
