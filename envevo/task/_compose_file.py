"""Compose files: parse with line numbers in errors, and keep build contexts and bind mounts inside the task."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

import yaml

from envevo.errors import TaskError
from envevo.task._files import normjoin

COMPOSE_NAMES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")


def parse_yaml(text: str, where: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise TaskError(f"{where}: malformed YAML{line}: {e.problem or e.context}; fix the syntax there") from e
    except yaml.YAMLError as e:
        raise TaskError(f"{where}: malformed YAML: {e}; fix the syntax") from e


def parse_compose(text: str, where: str) -> dict[str, object]:
    data = parse_yaml(text, where)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise TaskError(f"{where}: a compose file must be a mapping with a 'services' key")
    services = data.get("services", {})
    if services is not None and not isinstance(services, dict):
        raise TaskError(f"{where}: 'services' must be a mapping of service name to settings")
    return data


def compose_services(data: Mapping[str, object]) -> dict[str, object]:
    """The services of a compose mapping `parse_compose` returned (checked to be a mapping there), by name."""
    services = data.get("services")
    return services if isinstance(services, dict) else {}


def check_compose_paths(data: Mapping[str, object], compose_relpath: str, where: str) -> None:
    """Reject build contexts and relative bind mounts that reach outside the task directory."""
    base = posixpath.dirname(compose_relpath)
    for name, svc in compose_services(data).items():
        if not isinstance(svc, dict):
            raise TaskError(f"{where}: service {name!r} must be a mapping of settings")
        build = svc.get("build")
        context = build.get("context") if isinstance(build, dict) else build
        if isinstance(context, str) and _escapes(base, context):
            raise TaskError(
                f"{where}: service {name!r} builds from {context!r}, outside the task directory; "
                "move that build context into environment/"
            )
        for vol in svc.get("volumes") or []:
            source = vol.get("source") if isinstance(vol, dict) else (vol.split(":", 1)[0] if isinstance(vol, str) and ":" in vol else None)
            # Named volumes ("data:/x") are fine; host paths must stay inside the task.
            if isinstance(source, str) and source.startswith((".", "/", "~")) and _escapes(base, source):
                raise TaskError(
                    f"{where}: service {name!r} mounts {source!r}, outside the task directory; "
                    "copy that data into environment/ instead"
                )


def _escapes(base: str, ref: str) -> bool:
    if "${" in ref or "://" in ref or ref.startswith("git@"):
        return False  # Harbor's own variables and remote (git/URL) contexts
    if ref.startswith(("/", "~")):
        return True  # a host path: the task would read the host's files
    return normjoin(base, ref) is None
