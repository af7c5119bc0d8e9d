"""Terminal-Bench 1 -> Harbor conversion, in memory.

TB1 layout: task.yaml, Dockerfile and/or docker-compose.yaml at the root, solution.sh or
solution.yaml, run-tests.sh (optional), tests/, plus fixtures. The mapping follows Harbor's own
TB1 mapper: fixtures and the image build go to environment/, the compose file collapses into the
Dockerfile when it only carries TB1 boilerplate, and tests/test.sh runs the TB1 tests and turns
their exit status into /logs/verifier/reward.txt.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from envevo.errors import TaskError
from envevo.task._compose import parse_compose, parse_yaml
from envevo.task._config import CURRENT_SCHEMA_VERSION, ENVEVO_METADATA_KEY
from envevo.task._files import TaskFile, decode_text, normjoin
from envevo.task._model import Task

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
# Compose boilerplate every TB1 task carries; it has Harbor equivalents, so it is dropped.
_TB1_DEFAULT_VOLUMES = {
    "${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}",
    "${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}",
}
_TB1_DEFAULT_ENV = {"TEST_DIR=${T_BENCH_TEST_DIR}"}
_HARBOR_OWNED = {"build", "image", "container_name", "command", "environment", "volumes"}
_DOCKERFILE_FIELDS = {"environment", "working_dir", "expose", "entrypoint", "platform"}
_ROOT_SPECIALS = {"task.yaml", "solution.sh", "solution.yaml", "run-tests.sh"}

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

# Appended to the Dockerfile of a TB1 task without run-tests.sh: TB1's default runner (pytest) is
# installed when the image is built, so the tests run without network. Package managers first (apt
# over http works in builds where PyPI over https may not), pip as the fallback, apt again for images
# whose own python3 (python:*-slim's /usr/local/bin/python3) is not the distro's. Nothing here may fail
# the build: an image that cannot get pytest still builds, and run-tests.sh says what is missing.
PYTEST_AT_BUILD = r"""RUN have() { python3 -m pytest --version >/dev/null 2>&1 || /usr/bin/python3 -m pytest --version >/dev/null 2>&1; }; \
    distro() { \
      if command -v apt-get >/dev/null 2>&1; then \
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pytest; \
          rm -rf /var/lib/apt/lists/*; } >/dev/null 2>&1; \
      elif command -v apk >/dev/null 2>&1; then apk add --no-cache -q py3-pytest >/dev/null 2>&1; \
      elif command -v dnf >/dev/null 2>&1; then dnf install -y -q python3-pytest >/dev/null 2>&1; \
      fi; }; \
    pypi() { python3 -m pip install -q --retries 1 --timeout 20 pytest >/dev/null 2>&1 \
      || python3 -m pip install -q --retries 1 --timeout 20 --break-system-packages pytest >/dev/null 2>&1; }; \
    python3 -m pytest --version >/dev/null 2>&1 && exit 0; \
    case "$(command -v python3)" in /usr/bin/python3|"") distro ;; esac; \
    python3 -m pytest --version >/dev/null 2>&1 || pypi; \
    have || distro; \
    have || echo "envevo: could not install pytest at build time; the tests will try at test time" >&2; \
    exit 0"""


def convert_tb1(files: dict[str, TaskFile], root: Path) -> Task:
    """Build a Harbor Task from the files of a TB1 task directory."""
    where = str(root)
    spec = _read_task_yaml(files, where)
    out: dict[str, TaskFile] = {}

    instruction = _instruction(spec, where)
    out["instruction.md"] = TaskFile(data=(instruction if instruction.endswith("\n") else instruction + "\n").encode())

    # No run-tests.sh means TB1's default runner, pytest: install it at build time, not at test time.
    docker_image = _convert_environment(files, out, where, pytest_at_build="run-tests.sh" not in files)
    _convert_tests(files, out, where)
    _convert_solution(files, out, where)

    metadata: dict[str, Any] = {k: spec[k] for k in _METADATA_FIELDS if spec.get(k) is not None}
    metadata[ENVEVO_METADATA_KEY] = {"imported_from": TB1_FORMAT}
    if isinstance(spec.get("parser_name"), str):
        metadata[ENVEVO_METADATA_KEY]["tb1_parser"] = spec["parser_name"]
    config: dict[str, Any] = {
        "schema_version": CURRENT_SCHEMA_VERSION,
        "metadata": metadata,
        "verifier": {"timeout_sec": _seconds(spec, "max_test_timeout_sec", TB1_TEST_TIMEOUT_SEC, where)},
        "agent": {"timeout_sec": _seconds(spec, "max_agent_timeout_sec", TB1_AGENT_TIMEOUT_SEC, where)},
    }
    if docker_image:
        config["environment"] = {"docker_image": docker_image}
    return Task(files=out, config=config, source=root, source_format=TB1_FORMAT)


def _text(files: dict[str, TaskFile], path: str, where: str) -> str:
    text = decode_text(files[path].data)
    if text is None:
        raise TaskError(f"{where}/{path} is not UTF-8 text (it looks binary); save it as UTF-8 text")
    return text


def _read_task_yaml(files: dict[str, TaskFile], where: str) -> dict[str, Any]:
    spec = parse_yaml(_text(files, "task.yaml", where), f"{where}/task.yaml")
    if not isinstance(spec, dict):
        raise TaskError(f"{where}/task.yaml must be a mapping with an 'instruction' key")
    return spec


def _instruction(spec: dict[str, Any], where: str) -> str:
    text = spec.get("instruction")
    if isinstance(text, str) and text.strip():
        return text
    # Early TB1 tasks: descriptions: [{key: base, description: ...}, ...]
    descriptions = spec.get("descriptions")
    if isinstance(descriptions, list):
        entries = [d for d in descriptions if isinstance(d, dict) and isinstance(d.get("description"), str)]
        base = [d for d in entries if d.get("key") == "base"] or entries
        if base:
            return base[0]["description"]
    raise TaskError(f"{where}/task.yaml has no 'instruction'; add the task description under instruction:")


def _seconds(spec: dict[str, Any], key: str, default: float, where: str) -> float:
    value = spec.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskError(f"{where}/task.yaml: {key} must be a positive number of seconds, got {value!r}")
    return float(value)


# ---- environment ----------------------------------------------------------------------------


def _convert_environment(
    files: dict[str, TaskFile], out: dict[str, TaskFile], where: str, pytest_at_build: bool = False
) -> str | None:
    """Fill environment/ and return a prebuilt docker_image when the task has no Dockerfile.

    With `pytest_at_build`, the Dockerfile also installs pytest; a prebuilt image then gets a
    Dockerfile of its own (FROM the image), since only a build can add the runner.
    """
    compose_name = next((n for n in ("docker-compose.yaml", "docker-compose.yml") if n in files), None)
    compose: dict[str, Any] = {}
    if compose_name:
        compose = parse_compose(_text(files, compose_name, where), f"{where}/{compose_name}")
    services: dict[str, Any] = compose.get("services") or {}
    main_name = "client" if "client" in services else next(iter(services), None)
    main: dict[str, Any] = services.get(main_name) or {} if main_name else {}
    if not isinstance(main, dict):
        raise TaskError(f"{where}/{compose_name}: service {main_name!r} must be a mapping of settings")

    build = main.get("build")
    context, dockerfile_name = ".", "Dockerfile"
    if isinstance(build, str):
        context = build
    elif isinstance(build, dict):
        context = str(build.get("context", "."))
        dockerfile_name = str(build.get("dockerfile", "Dockerfile"))
    ctx = normjoin("", context)
    if ctx is None or context.startswith("/"):
        raise TaskError(f"{where}/{compose_name}: build context {context!r} is outside the task directory; move it inside")
    dockerfile_src = normjoin(ctx, dockerfile_name)
    if dockerfile_src is None:
        raise TaskError(f"{where}/{compose_name}: dockerfile {dockerfile_name!r} is outside the task directory")

    # Fixtures: everything not TB1 machinery goes into environment/, the main build context
    # flattened onto environment/ because Harbor builds the main image from there.
    skip = _ROOT_SPECIALS | ({compose_name} if compose_name else set())
    for path, f in files.items():
        if path in skip or path.startswith("tests/"):
            continue
        if ctx and (path == ctx or path.startswith(ctx + "/")):
            continue
        out[f"environment/{path}"] = f
    if ctx:
        for path, f in files.items():
            if path.startswith(ctx + "/"):
                out[f"environment/{path[len(ctx) + 1:]}"] = f

    image = main.get("image")
    prebuilt = image if isinstance(image, str) and "${" not in image and build is None else None
    if dockerfile_src in files:
        text = _text(files, dockerfile_src, where)
        rel_in_env = dockerfile_src[len(ctx) + 1:] if ctx else dockerfile_src
        if rel_in_env != "Dockerfile":
            out.pop(f"environment/{rel_in_env}", None)
        if not ctx:
            _copy_referenced(text, files, out)
        out["environment/Dockerfile"] = TaskFile(data=_dockerfile_with(text, main, pytest_at_build).encode())
        prebuilt = None
    elif prebuilt is not None and pytest_at_build:
        out["environment/Dockerfile"] = TaskFile(data=_dockerfile_with(f"FROM {prebuilt}\n", main, True).encode())
        prebuilt = None
    elif prebuilt is None:
        raise TaskError(
            f"{where}: no environment; TB1 tasks need a Dockerfile (or a docker-compose.yaml whose main "
            "service names a prebuilt image)"
        )

    if services and not _collapsible(compose, main):
        out["environment/docker-compose.yaml"] = TaskFile(
            data=_harbor_compose(compose, main_name, main, prebuilt).encode()
        )
    return prebuilt


def _copy_referenced(dockerfile: str, files: dict[str, TaskFile], out: dict[str, TaskFile]) -> None:
    """TB1 Dockerfiles may COPY tests/, solution.sh or run-tests.sh into the image: keep them in the build context."""
    sources: set[str] = set()
    for line in dockerfile.splitlines():
        tokens = line.split()
        if len(tokens) >= 3 and tokens[0].upper() in ("COPY", "ADD"):
            sources.update(t.removeprefix("./").rstrip("/") for t in tokens[1:-1] if not t.startswith("--"))
    for src in sources:
        if src in ("solution.sh", "run-tests.sh", "solution.yaml", "task.yaml") and src in files:
            out[f"environment/{src}"] = files[src]
        elif src == "tests" or src.startswith("tests/"):
            for path, f in files.items():
                if path == src or path.startswith(src + "/"):
                    out[f"environment/{path}"] = f


def _last_user(dockerfile: str) -> str | None:
    """The USER the image's final stage ends with, if the Dockerfile sets one."""
    user = None
    for line in dockerfile.splitlines():
        tokens = line.split()
        if tokens and tokens[0].upper() == "FROM":
            user = None
        elif len(tokens) >= 2 and tokens[0].upper() == "USER":
            user = tokens[1]
    return user


def _dockerfile_with(text: str, service: dict[str, Any], pytest_at_build: bool = False) -> str:
    """Fold the compose settings Harbor's compose base does not carry into the Dockerfile (and pytest, if asked)."""
    additions = ["ENV TEST_DIR=/tests"]
    env = service.get("environment")
    items: list[str] = []
    if isinstance(env, list):
        items = [str(e) for e in env]
    elif isinstance(env, dict):
        items = [f"{k}={'' if v is None else v}" for k, v in env.items()]
    for item in items:
        if item in _TB1_DEFAULT_ENV or item.startswith("TEST_DIR="):
            continue
        key, sep, value = item.partition("=")
        additions.append(f"ENV {key}={json.dumps(value)}" if sep else f"ENV {key}")
    workdir = service.get("working_dir")
    if isinstance(workdir, str) and "${" not in workdir:
        additions.append(f"WORKDIR {workdir}")
    expose = service.get("expose")
    for port in expose if isinstance(expose, list) else ([expose] if expose is not None else []):
        additions.append(f"EXPOSE {port}")
    if pytest_at_build:
        user = _last_user(text)
        if user and user not in ("root", "0", "0:0"):
            additions += ["USER root", PYTEST_AT_BUILD, f"USER {user}"]
        else:
            additions.append(PYTEST_AT_BUILD)
    entrypoint = service.get("entrypoint")
    if entrypoint is not None:
        additions.append(f"ENTRYPOINT {json.dumps(entrypoint if isinstance(entrypoint, list) else shlex.split(str(entrypoint)))}")

    platform = service.get("platform")
    if isinstance(platform, str) and platform:
        text = re.sub(
            r"^(\s*FROM\s+)(?:--platform=\S+\s+)?",
            lambda m: f"{m.group(1)}--platform={platform} ",
            text,
            flags=re.MULTILINE | re.IGNORECASE,
        )
    if not text.endswith("\n"):
        text += "\n"
    return text + "\n# Added by envevo when importing from Terminal-Bench 1\n" + "\n".join(additions) + "\n"


def _collapsible(compose: dict[str, Any], main: dict[str, Any]) -> bool:
    """One service, only TB1 boilerplate and Dockerfile-expressible settings: the Dockerfile suffices."""
    if len(compose.get("services") or {}) != 1 or any(k not in ("services", "version") for k in compose):
        return False
    for key, value in main.items():
        if key not in _HARBOR_OWNED | _DOCKERFILE_FIELDS:
            return False
        if key == "volumes" and not set(map(str, value or [])) <= _TB1_DEFAULT_VOLUMES:
            return False
    return True


def _harbor_compose(compose: dict[str, Any], main_name: str | None, main: dict[str, Any], prebuilt: str | None) -> str:
    import yaml

    harbor_main: dict[str, Any] = (
        {"image": prebuilt} if prebuilt else {"build": {"context": "${CONTEXT_DIR}"}, "image": "${MAIN_IMAGE_NAME}"}
    )
    harbor_main["command"] = ["sh", "-c", "sleep infinity"]
    harbor_main["environment"] = ["TEST_DIR=/tests"]
    for key, value in main.items():
        if key not in _HARBOR_OWNED and key not in _DOCKERFILE_FIELDS:
            harbor_main[key] = value
    custom_volumes = [v for v in main.get("volumes") or [] if str(v) not in _TB1_DEFAULT_VOLUMES]
    if custom_volumes:
        harbor_main["volumes"] = custom_volumes
    converted: dict[str, Any] = {k: v for k, v in compose.items() if k not in ("services", "version")}
    services: dict[str, Any] = {"main": harbor_main}
    for name, svc in (compose.get("services") or {}).items():
        if name != main_name:
            services[name] = svc
    converted = {"services": services, **converted}
    text = yaml.safe_dump(converted, sort_keys=False)
    return text.replace("${T_BENCH_TASK_DOCKER_NAME_PREFIX}", "hb")


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
        _text(files, "run-tests.sh", where)
        out[f"tests/{runner}"] = TaskFile(data=files["run-tests.sh"].data, executable=True)
    else:
        out[f"tests/{runner}"] = TaskFile(data=DEFAULT_RUN_TESTS.encode(), executable=True)
    out["tests/test.sh"] = TaskFile(data=TEST_SH.format(runner=runner).encode(), executable=True)


def _convert_solution(files: dict[str, TaskFile], out: dict[str, TaskFile], where: str) -> None:
    if "solution.sh" in files:
        _text(files, "solution.sh", where)
        out["solution/solve.sh"] = TaskFile(data=files["solution.sh"].data, executable=True)
    elif "solution.yaml" in files:
        out["solution/solve.sh"] = TaskFile(data=_solution_yaml_to_sh(files, where).encode(), executable=True)


def _solution_yaml_to_sh(files: dict[str, TaskFile], where: str) -> str:
    """TB1's solution.yaml is a list of terminal commands; run them in order as a script."""
    steps = parse_yaml(_text(files, "solution.yaml", where), f"{where}/solution.yaml")
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
