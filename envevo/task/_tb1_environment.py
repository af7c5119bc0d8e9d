"""Terminal-Bench 1 -> Harbor conversion: the environment (Dockerfile, compose file, fixtures).

A TB1 compose file collapses into the Dockerfile when it only carries TB1 boilerplate; otherwise it becomes a
Harbor compose file whose main service is built from environment/.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping

from envevo.errors import TaskError
from envevo.task._compose_file import compose_services, parse_compose
from envevo.task._files import TaskFile, decode_text, normjoin

# Compose boilerplate every TB1 task carries; it has Harbor equivalents, so it is dropped.
_TB1_DEFAULT_VOLUMES = {
    "${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}",
    "${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}",
}
_TB1_DEFAULT_ENV = {"TEST_DIR=${T_BENCH_TEST_DIR}"}
_HARBOR_OWNED = {"build", "image", "container_name", "command", "environment", "volumes"}
_ROOT_SPECIALS = {"task.yaml", "solution.sh", "solution.yaml", "run-tests.sh"}
_DOCKERFILE_FIELDS = {"environment", "working_dir", "expose", "entrypoint", "platform"}

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


def read_text(files: dict[str, TaskFile], path: str, where: str) -> str:
    text = decode_text(files[path].data)
    if text is None:
        raise TaskError(f"{where}/{path} is not UTF-8 text (it looks binary); save it as UTF-8 text")
    return text


def convert_environment(
    files: dict[str, TaskFile], out: dict[str, TaskFile], where: str, pytest_at_build: bool = False
) -> str | None:
    """Fill environment/ and return a prebuilt docker_image when the task has no Dockerfile.

    With `pytest_at_build`, the Dockerfile also installs pytest; a prebuilt image then gets a
    Dockerfile of its own (FROM the image), since only a build can add the runner.
    """
    compose_name = next((n for n in ("docker-compose.yaml", "docker-compose.yml") if n in files), None)
    compose: dict[str, object] = {}
    if compose_name:
        compose = parse_compose(read_text(files, compose_name, where), f"{where}/{compose_name}")
    services = compose_services(compose)
    main_name = "client" if "client" in services else next(iter(services), None)
    main = services.get(main_name) or {} if main_name else {}
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
        text = read_text(files, dockerfile_src, where)
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


def _dockerfile_with(text: str, service: Mapping[str, object], pytest_at_build: bool = False) -> str:
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


def _listed(value: object) -> list[object]:
    """The entries of a compose list (a mapping or a string stands for its keys or characters, as YAML reads them)."""
    return list(value) if isinstance(value, (list, dict, str)) else []


def _collapsible(compose: Mapping[str, object], main: Mapping[str, object]) -> bool:
    """One service, only TB1 boilerplate and Dockerfile-expressible settings: the Dockerfile suffices."""
    if len(compose_services(compose)) != 1 or any(k not in ("services", "version") for k in compose):
        return False
    for key, value in main.items():
        if key not in _HARBOR_OWNED | _DOCKERFILE_FIELDS:
            return False
        if key == "volumes" and not set(map(str, _listed(value))) <= _TB1_DEFAULT_VOLUMES:
            return False
    return True


def _harbor_compose(compose: Mapping[str, object], main_name: str | None, main: Mapping[str, object],
                    prebuilt: str | None) -> str:
    import yaml

    harbor_main: dict[str, object] = (
        {"image": prebuilt} if prebuilt else {"build": {"context": "${CONTEXT_DIR}"}, "image": "${MAIN_IMAGE_NAME}"}
    )
    harbor_main["command"] = ["sh", "-c", "sleep infinity"]
    harbor_main["environment"] = ["TEST_DIR=/tests"]
    for key, value in main.items():
        if key not in _HARBOR_OWNED and key not in _DOCKERFILE_FIELDS:
            harbor_main[key] = value
    custom_volumes = [v for v in _listed(main.get("volumes")) if str(v) not in _TB1_DEFAULT_VOLUMES]
    if custom_volumes:
        harbor_main["volumes"] = custom_volumes
    converted: dict[str, object] = {k: v for k, v in compose.items() if k not in ("services", "version")}
    services: dict[str, object] = {"main": harbor_main}
    for name, svc in compose_services(compose).items():
        if name != main_name:
            services[name] = svc
    converted = {"services": services, **converted}
    text = yaml.safe_dump(converted, sort_keys=False)
    return text.replace("${T_BENCH_TASK_DOCKER_NAME_PREFIX}", "hb")
