"""Components and per-component diffs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envevo.task import COMPONENTS, component_of, diff_tasks, load_task

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"


@pytest.mark.parametrize(
    ("path", "component"),
    [
        ("instruction.md", "instruction"),
        ("trajectory.json", "instruction"),
        ("environment/Dockerfile", "environment"),
        ("environment/data/blob.bin", "environment"),
        ("tests/test.sh", "verification"),
        ("tests/sub/test_x.py", "verification"),
        ("solution/solve.sh", "solution"),
        ("task.toml", "config"),
        ("README.md", "config"),
        (".gitignore", "config"),
        ("steps/s1/instruction.md", "instruction"),
        ("steps/s1/tests/test.sh", "verification"),
        ("steps/s1/solution/solve.sh", "solution"),
        ("steps/s1/workdir/setup.sh", "environment"),
        ("steps/s1/notes.txt", "config"),
        ("workdir/x", "config"),
        ("other/tests/x", "config"),
    ],
)
def test_each_path_belongs_to_its_component(path: str, component: str) -> None:
    assert component_of(path) == component


@pytest.mark.parametrize("name", ["harbor-basic", "harbor-multistep", "tb1-compose"])
def test_components_partition_the_task(name: str) -> None:
    task = load_task(FIXTURES / name)
    parts = {c: set(task.paths(c)) for c in COMPONENTS}
    union = set().union(*parts.values())
    assert union == set(task.paths())
    assert sum(len(p) for p in parts.values()) == len(union)  # disjoint


def test_multi_step_components() -> None:
    task = load_task(FIXTURES / "harbor-multistep")
    assert task.paths("instruction") == ["steps/query/instruction.md", "steps/setup/instruction.md"]
    assert "steps/query/workdir/setup.sh" in task.paths("environment")
    assert set(task.paths("verification")) == {"steps/setup/tests/test.sh", "tests/test.sh"}


def test_identical_tasks_have_an_empty_diff() -> None:
    d = diff_tasks(load_task(FIXTURES / "harbor-basic"), load_task(FIXTURES / "harbor-basic"))
    assert d.empty and d.mutated == set() and d.components == {}


def test_instruction_edit_mutates_only_instruction() -> None:
    a = load_task(FIXTURES / "harbor-basic")
    b = a.model_copy(deep=True)
    b.write("instruction.md", a.read_text("instruction.md") + "Round to two decimals.\n")
    d = diff_tasks(a, b)
    assert d.mutated == {"instruction"}
    (change,) = d.changes
    assert change.kind == "modified" and not change.binary
    assert "+Round to two decimals." in change.diff
    assert change.diff.startswith("--- a/instruction.md\n+++ b/instruction.md\n")


def test_added_removed_and_modified_files_per_component() -> None:
    a = load_task(FIXTURES / "harbor-basic")
    b = a.model_copy(deep=True)
    b.write("tests/test_extra.py", "def test():\n    assert True\n")
    b.remove("solution/solve.sh")
    b.write("environment/Dockerfile", a.read_text("environment/Dockerfile").replace("bookworm", "trixie"))
    b.set_envevo_metadata({"generation": 1})
    d = diff_tasks(a, b)
    assert d.mutated == {"verification", "solution", "environment", "config"}
    assert d.components["verification"].added == ["tests/test_extra.py"]
    assert d.components["solution"].removed == ["solution/solve.sh"]
    assert d.components["environment"].modified == ["environment/Dockerfile"]
    assert d.components["config"].modified == ["task.toml"]
    assert list(d.components) == ["environment", "verification", "solution", "config"]  # canonical order
    added = next(c for c in d.changes if c.path == "tests/test_extra.py")
    assert added.diff.startswith("--- /dev/null\n+++ b/tests/test_extra.py")
    removed = next(c for c in d.changes if c.path == "solution/solve.sh")
    assert "+++ /dev/null" in removed.diff and "-#!/bin/bash" in removed.diff


def test_binary_file_differs_without_a_text_diff() -> None:
    a = load_task(FIXTURES / "harbor-basic")
    b = a.model_copy(deep=True)
    b.write("environment/data/blob.bin", b"\x00\x01\x02")
    (change,) = diff_tasks(a, b).changes
    assert change.binary and change.diff == "binary file environment/data/blob.bin differs"


def test_mode_change_is_a_modification() -> None:
    a = load_task(FIXTURES / "harbor-basic")
    b = a.model_copy(deep=True)
    b.write("environment/data/input.csv", a.read_bytes("environment/data/input.csv"), executable=True)
    (change,) = diff_tasks(a, b).changes
    assert change.kind == "modified" and "mode 644 -> 755" in change.diff


def test_diff_filters_by_component_and_serializes_to_json() -> None:
    a = load_task(FIXTURES / "harbor-basic")
    b = a.model_copy(deep=True)
    b.write("instruction.md", "New.\n")
    b.write("tests/test.sh", "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n")
    d = diff_tasks(a, b)
    only = d.only(["verification"])
    assert only.mutated == {"verification"}
    data = json.loads(d.model_dump_json())
    assert data["mutated"] == ["instruction", "verification"]
    assert set(data["components"]) == {"instruction", "verification"}


def test_diff_between_tb1_import_and_harbor_original_shape() -> None:
    d = diff_tasks(load_task(FIXTURES / "tb1-basic"), load_task(FIXTURES / "tb1-compose"))
    assert {"instruction", "environment", "solution", "config"} <= d.mutated
