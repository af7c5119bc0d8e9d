"""Bad input: every user-caused problem is one TaskError line naming the problem and the fix."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from envevo.errors import TaskError, UserError
from envevo.task import Task, load_task, save

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"


def _copy(tmp_path: Path, name: str = "harbor-basic") -> Path:
    return shutil.copytree(FIXTURES / name, tmp_path / name)


def _load_error(path: Path, **kwargs) -> str:
    with pytest.raises(TaskError) as info:
        load_task(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message, "errors are one line"
    assert isinstance(info.value, UserError)
    return message


def test_nonexistent_path(tmp_path: Path) -> None:
    assert "does not exist" in _load_error(tmp_path / "nope")


def test_file_instead_of_directory(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    assert "not a directory" in _load_error(tmp_path / "f.txt")


def test_directory_that_is_not_a_task(tmp_path: Path) -> None:
    msg = _load_error(tmp_path)
    assert "task.toml" in msg and "task.yaml" in msg


def test_dataset_folder_is_not_a_task() -> None:
    assert "neither task.toml" in _load_error(FIXTURES)


def _mutated(tmp_path: Path, edit: Callable[[Path], None], name: str = "harbor-basic") -> str:
    src = _copy(tmp_path, name)
    edit(src)
    return _load_error(src)


def test_missing_instruction(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "instruction.md").unlink())
    assert "missing instruction.md" in msg


def test_missing_test_script(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "tests" / "test.sh").unlink())
    assert "tests/test.sh" in msg and "reward.txt" in msg


def test_windows_task_needs_test_bat(tmp_path: Path) -> None:
    def edit(p: Path) -> None:
        (p / "task.toml").write_text((p / "task.toml").read_text().replace("[environment]", '[environment]\nos = "windows"'))

    assert "tests/test.bat" in _mutated(tmp_path, edit)


def test_missing_environment(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "environment" / "Dockerfile").unlink())
    assert "no environment" in msg and "docker_image" in msg and "Dockerfile" in msg


def test_multi_step_missing_step_instruction(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "steps" / "query" / "instruction.md").unlink(), "harbor-multistep")
    assert "steps/query/instruction.md" in msg


def test_multi_step_missing_any_test_script(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "tests" / "test.sh").unlink(), "harbor-multistep")
    assert "step 'query'" in msg and "test.sh" in msg


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "task.toml").write_text('schema_version = "1.4"\n\n[agent\ntimeout_sec = 1\n'))
    assert "task.toml" in msg and "line 3" in msg and "malformed TOML" in msg


def test_malformed_tb1_yaml_names_file_and_line(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "task.yaml").write_text("instruction: do it\ntags: [a, b\nauthor: x\n"), "tb1-basic")
    assert "task.yaml" in msg and "malformed YAML" in msg and "line 3" in msg


def test_malformed_compose_yaml_names_file_and_line(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    image: [x\n"),
                   "harbor-legacy")
    assert "docker-compose.yaml" in msg and "malformed YAML" in msg and "line" in msg


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('environment = "ubuntu"\n', "[environment] must be a table"),
        ('[agent]\ntimeout_sec = "long"\n', "timeout_sec must be a positive number"),
        ("schema_version = 1.4\n", "schema_version must be a string"),
        ("[environment]\ndocker_image = 5\n", "docker_image must be a non-empty"),
        ('[environment]\nos = "macos"\n', "os must be 'linux' or 'windows'"),
        ('[[steps]]\nname = ".."\n', "step name '..'"),
        ('[[steps]]\nname = "a/b"\n', "step name 'a/b'"),
        ('[[steps]]\nname = "a"\n[[steps]]\nname = "a"\n', "used twice"),
        ("[metadata]\nenvevo = 3\n", "[metadata.envevo] must be a table"),
        ("artifacts = [1]\n", "artifacts must be a list"),
        ('[verifier]\nenvironment = "x"\n', "[verifier.environment] must be a table"),
        ('[environment]\nmemory = "lots"\n', "not a size like '2G'"),
    ],
)
def test_bad_config_values(tmp_path: Path, toml: str, expected: str) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "task.toml").write_text(toml))
    assert expected in msg


def test_symlink_pointing_outside_the_task(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host file")
    msg = _mutated(tmp_path, lambda p: (p / "environment" / "leak.txt").symlink_to(secret))
    assert "environment/leak.txt" in msg and "outside the task" in msg


def test_relative_symlink_escaping_with_dotdot(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    msg = _mutated(tmp_path, lambda p: (p / "tests" / "up").symlink_to("../../outside"))
    assert "tests/up" in msg and "outside the task" in msg


def test_dangling_symlink(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "tests" / "gone").symlink_to("missing.txt"))
    assert "dangling" in msg


def test_symlink_cycle(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "environment" / "loop").symlink_to("."))
    assert "cycle" in msg


def test_compose_build_context_outside_the_task(tmp_path: Path) -> None:
    def edit(p: Path) -> None:
        (p / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build:\n      context: ../..\n")

    msg = _mutated(tmp_path, edit, "harbor-legacy")
    assert "outside the task directory" in msg and "'../..'" in msg


def test_compose_host_bind_mount(tmp_path: Path) -> None:
    def edit(p: Path) -> None:
        (p / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    volumes:\n      - /etc:/host-etc\n")

    assert "mounts '/etc'" in _mutated(tmp_path, edit, "harbor-legacy")


@pytest.mark.parametrize("path", ["instruction.md", "tests/test.sh", "solution/solve.sh"])
def test_binary_where_text_is_required(tmp_path: Path, path: str) -> None:
    msg = _mutated(tmp_path, lambda p: (p / path).write_bytes(b"\xff\xfe\x00binary"))
    assert path in msg and "not UTF-8 text" in msg


def test_binary_task_toml(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "task.toml").write_bytes(b"\xff\xfe\x00"))
    assert "task.toml" in msg and "UTF-8" in msg


def test_oversized_file(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    (src / "environment" / "data" / "big.bin").write_bytes(b"x" * 5000)
    msg = _load_error(src, max_file_bytes=4096)
    assert "big.bin" in msg and "per-file limit" in msg


def test_oversized_task(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    for i in range(4):
        (src / "environment" / "data" / f"part{i}.bin").write_bytes(b"x" * 1000)
    assert "total size limit" in _load_error(src, max_total_bytes=3000)


def test_default_limits_allow_binary_fixtures() -> None:
    load_task(FIXTURES / "harbor-basic")  # contains environment/data/blob.bin


def test_tb1_without_instruction(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "task.yaml").write_text("difficulty: easy\n"), "tb1-basic")
    assert "no 'instruction'" in msg


def test_tb1_without_dockerfile(tmp_path: Path) -> None:
    msg = _mutated(tmp_path, lambda p: (p / "Dockerfile").unlink(), "tb1-basic")
    assert "no environment" in msg


def test_tb1_keystroke_solution(tmp_path: Path) -> None:
    def edit(p: Path) -> None:
        (p / "solution.yaml").write_text("- command: vim file\n- command: ':wq'\n  append_enter: false\n")

    msg = _mutated(tmp_path, edit, "tb1-compose")
    assert "entry 2" in msg and "keystrokes" in msg and "solution.sh" in msg


def test_tb1_build_context_escape(tmp_path: Path) -> None:
    def edit(p: Path) -> None:
        (p / "docker-compose.yaml").write_text("services:\n  client:\n    build:\n      context: ..\n")

    assert "outside the task directory" in _mutated(tmp_path, edit, "tb1-basic")


@pytest.mark.parametrize(("path", "expected"),
                         [("../x", "'..'"), ("/etc/passwd", "must be relative"), ("a/../../b", "'..'"), ("", "must be relative")])
def test_task_api_rejects_paths_that_escape(path: str, expected: str) -> None:
    task = load_task(FIXTURES / "harbor-basic")
    before = task.content_hash()
    with pytest.raises(TaskError, match=expected.replace(".", r"\.")):
        task.write(path, "x")
    assert task.content_hash() == before


def test_task_api_rejects_file_directory_clash() -> None:
    task = load_task(FIXTURES / "harbor-basic")
    with pytest.raises(TaskError, match="in the way"):
        task.write("tests/test.sh/inner", "x")


def test_saving_an_invalid_task_is_refused(tmp_path: Path) -> None:
    task = Task()
    task.write("instruction.md", "x")
    with pytest.raises(TaskError, match="tests/test.sh"):
        save(task, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_save_onto_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(TaskError, match="a file is in the way"):
        save(load_task(FIXTURES / "harbor-basic"), tmp_path / "f")
