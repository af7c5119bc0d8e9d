"""Terminal-Bench 1 -> Harbor conversion, in memory.

TB1 layout: task.yaml, Dockerfile and/or docker-compose.yaml at the root, solution.sh or
solution.yaml, run-tests.sh (optional), tests/, plus fixtures. The mapping follows Harbor's own
TB1 mapper: fixtures and the image build go to environment/, the compose file collapses into the
Dockerfile when it only carries TB1 boilerplate, and tests/test.sh runs the TB1 tests and turns
their exit status into /logs/verifier/reward.txt.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from envevo.errors import TaskError
from envevo.task._compose_file import parse_yaml
from envevo.task._config import CURRENT_SCHEMA_VERSION, ENVEVO_METADATA_KEY
from envevo.task._files import TaskFile
from envevo.task._model import Task
from envevo.task._tb1_environment import convert_environment, read_text

TB1_FORMAT = "terminal-bench-1"
# TB1's task.yaml defaults, as Harbor's mapper reads them.
TB1_AGENT_TIMEOUT_SEC = 360.0
TB1_TEST_TIMEOUT_SEC = 60.0

_METADATA_FIELDS = (
    "author_name",
    "author_email",
    "difficulty",
    "category",
    "tags",
    "estimated_duration_sec",
    "expert_time_estimate_min",
    "junior_time_estimate_min",
)

TEST_SH = """#!/bin/bash
# Converted from Terminal-Bench 1 by envevo: run the task's TB1 test runner, then turn its
# exit status into Harbor's reward (1 = all tests passed, 0 = otherwise).
export TEST_DIR=/tests
mkdir -p /logs/verifier
bash /tests/{runner}
status=$?
if [ "$status" -eq 0 ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
exit "$status"
"""

DEFAULT_RUN_TESTS = """#!/bin/bash
# The TB1 task shipped no run-tests.sh; TB1's default runs pytest on tests/test_outputs.py.
# envevo's conversion installs pytest when the image is built (see environment/Dockerfile), so this
# needs no network; it finds pytest wherever the build put it, and installs it only as a last resort.
TESTS="$TEST_DIR/test_outputs.py"
if python3 -m pytest --version >/dev/null 2>&1; then
    exec python3 -m pytest "$TESTS" -rA
fi
for runner in pytest pytest-3 py.test-3; do
    if command -v "$runner" >/dev/null 2>&1; then
        exec "$runner" "$TESTS" -rA
    fi
done
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -m pytest --version >/dev/null 2>&1; then
    exec /usr/bin/python3 -m pytest "$TESTS" -rA  # the distro's pytest beside an image's own python3
fi
echo "envevo: pytest was not installed at build time; installing it now (needs network)" >&2
python3 -m pip install -q pytest || python3 -m pip install -q --break-system-packages pytest
python3 -m pytest "$TESTS" -rA
"""



def convert_tb1(files: dict[str, TaskFile], root: Path) -> Task:
    """Build a Harbor Task from the files of a TB1 task directory."""
    where = str(root)
    spec = _read_task_yaml(files, where)
    out: dict[str, TaskFile] = {}

    instruction = _instruction(spec, where)
    out["instruction.md"] = TaskFile(data=(instruction if instruction.endswith("\n") else instruction + "\n").encode())

    # No run-tests.sh means TB1's default runner, pytest: install it at build time, not at test time.
    docker_image = convert_environment(files, out, where, pytest_at_build="run-tests.sh" not in files)
    _convert_tests(files, out, where)
    _convert_solution(files, out, where)

    metadata: dict[str, object] = {k: spec[k] for k in _METADATA_FIELDS if spec.get(k) is not None}
    ours = metadata[ENVEVO_METADATA_KEY] = {"imported_from": TB1_FORMAT}
    if isinstance(parser := spec.get("parser_name"), str):
        ours["tb1_parser"] = parser
    config: dict[str, object] = {
        "schema_version": CURRENT_SCHEMA_VERSION,
        "metadata": metadata,
        "verifier": {"timeout_sec": _seconds(spec, "max_test_timeout_sec", TB1_TEST_TIMEOUT_SEC, where)},
        "agent": {"timeout_sec": _seconds(spec, "max_agent_timeout_sec", TB1_AGENT_TIMEOUT_SEC, where)},
    }
    if docker_image:
        config["environment"] = {"docker_image": docker_image}
    return Task(files=out, config=config, source=root, source_format=TB1_FORMAT)


def _read_task_yaml(files: dict[str, TaskFile], where: str) -> dict[str, object]:
    spec = parse_yaml(read_text(files, "task.yaml", where), f"{where}/task.yaml")
    if not isinstance(spec, dict):
        raise TaskError(f"{where}/task.yaml must be a mapping with an 'instruction' key")
    return spec


def _instruction(spec: Mapping[str, object], where: str) -> str:
    text = spec.get("instruction")
    if isinstance(text, str) and text.strip():
        return text
    # Early TB1 tasks: descriptions: [{key: base, description: ...}, ...]
    descriptions = spec.get("descriptions")
    if isinstance(descriptions, list):
        entries = [d for d in descriptions if isinstance(d, dict) and isinstance(d.get("description"), str)]
        base = [d for d in entries if d.get("key") == "base"] or entries
        if base:
            description: str = base[0]["description"]  # checked to be a str above
            return description
    raise TaskError(f"{where}/task.yaml has no 'instruction'; add the task description under instruction:")


def _seconds(spec: Mapping[str, object], key: str, default: float, where: str) -> float:
    value = spec.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskError(f"{where}/task.yaml: {key} must be a positive number of seconds, got {value!r}")
    return float(value)


# ---- tests and solution ------------------------------------------------------------------------


def _convert_tests(files: dict[str, TaskFile], out: dict[str, TaskFile], where: str) -> None:
    for path, f in files.items():
        if path.startswith("tests/"):
            out[path] = f
    if "tests/test.sh" in out:
        raise TaskError(
            f"{where}/tests/test.sh clashes with the Harbor test entry point the conversion writes; "
            "rename it (and its uses in run-tests.sh)"
        )
    runner = "run-tests.sh" if "tests/run-tests.sh" not in out else "tb1-run-tests.sh"
    if "run-tests.sh" in files:
        read_text(files, "run-tests.sh", where)
        out[f"tests/{runner}"] = TaskFile(data=files["run-tests.sh"].data, executable=True)
    else:
        out[f"tests/{runner}"] = TaskFile(data=DEFAULT_RUN_TESTS.encode(), executable=True)
    out["tests/test.sh"] = TaskFile(data=TEST_SH.format(runner=runner).encode(), executable=True)


def _convert_solution(files: dict[str, TaskFile], out: dict[str, TaskFile], where: str) -> None:
    if "solution.sh" in files:
        read_text(files, "solution.sh", where)
        out["solution/solve.sh"] = TaskFile(data=files["solution.sh"].data, executable=True)
    elif "solution.yaml" in files:
        out["solution/solve.sh"] = TaskFile(data=_solution_yaml_to_sh(files, where).encode(), executable=True)


def _solution_yaml_to_sh(files: dict[str, TaskFile], where: str) -> str:
    """TB1's solution.yaml is a list of terminal commands; run them in order as a script."""
    steps = parse_yaml(read_text(files, "solution.yaml", where), f"{where}/solution.yaml")
    if not isinstance(steps, list):
        raise TaskError(f"{where}/solution.yaml must be a list of {{command: ...}} entries")
    lines = [
        "#!/bin/bash",
        "# Converted from Terminal-Bench 1 solution.yaml by envevo: the commands run in order.",
    ]
    for i, step in enumerate(steps, 1):
        command = step.get("command") if isinstance(step, dict) else step
        if not isinstance(command, str):
            raise TaskError(f"{where}/solution.yaml entry {i} has no 'command' string")
        if isinstance(step, dict) and step.get("append_enter") is False:
            raise TaskError(
                f"{where}/solution.yaml entry {i} sends raw keystrokes (append_enter: false), which have no "
                "script equivalent; write the solution as solution.sh"
            )
        lines.append(command.rstrip("\n"))
    return "\n".join(lines) + "\n"
