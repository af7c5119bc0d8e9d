"""task.toml: parse, loosely validate, migrate to the current Harbor schema, render.

We keep the raw dict (not a typed model) so that fields we do not know survive a save
unchanged; only the fields envevo itself reads are type-checked.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
import warnings
from collections.abc import Mapping
from typing import Any, TypeGuard

import tomli_w

from envevo.errors import TaskError

CURRENT_SCHEMA_VERSION = "1.4"
ENVEVO_METADATA_KEY = "envevo"

_TABLES = ("task", "metadata", "verifier", "agent", "environment", "solution")
# Section order Harbor itself writes, so our task.toml files read like hand-written ones.
_SECTION_ORDER = ("task", "steps", "metadata", "verifier", "agent", "environment", "solution")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_BAD_STEP_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """Parse TOML; a syntax error names the file and line (tomllib puts the line in its message)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TaskError(f"{where}: malformed TOML: {e}; fix the syntax at that line") from e


def render_toml(data: Mapping[str, object]) -> str:
    """Render a dict as TOML with ``[section]`` and ``[[array]]`` headers (tomli_w writes
    arrays of tables inline, which is valid but hard to read and edit)."""
    clean = _without_none(dict(data))
    assert isinstance(clean, dict)
    ordered: dict[str, object] = {}
    if "schema_version" in clean:
        ordered["schema_version"] = clean["schema_version"]
    for key, value in clean.items():
        if not _is_table(value) and not _is_table_array(value):
            ordered.setdefault(key, value)
    for key in _SECTION_ORDER:
        if key in clean:
            ordered.setdefault(key, clean[key])
    for key, value in clean.items():
        ordered.setdefault(key, value)
    text = _render_table(ordered, []).lstrip("\n")
    if tomllib.loads(text) != clean:  # a writer bug must never silently change a task
        raise AssertionError("TOML rendering did not round-trip")
    return text


def _render_table(table: Mapping[str, object], prefix: list[str]) -> str:
    out: list[str] = []
    for key, value in table.items():
        if not _is_table(value) and not _is_table_array(value):
            out.append(f"{_key(key)} = {_value(value)}\n")
    for key, value in table.items():
        if _is_table(value):
            path = [*prefix, key]
            out.append(f"\n[{_dotted(path)}]\n" + _render_table(value, path))
        elif _is_table_array(value):
            path = [*prefix, key]
            for item in value:
                out.append(f"\n[[{_dotted(path)}]]\n" + _render_table(item, path))
    return "".join(out)


def _dotted(path: list[str]) -> str:
    return ".".join(_key(k) for k in path)


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value: object) -> str:
    """One TOML value. Arrays and inline tables stay on one line (tomli_w would spread every
    array over several lines); scalars are formatted by tomli_w."""
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    return tomli_w.dumps({"v": value}, multiline_strings=True)[len("v = ") :].rstrip("\n")


def _is_table(value: object) -> TypeGuard[dict[str, object]]:
    return isinstance(value, dict)


def _is_table_array(value: object) -> TypeGuard[list[dict[str, object]]]:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _without_none(value: object) -> object:
    # TOML has no null; a None (e.g. from TB1's task.yaml) means "unset".
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value


def migrate_config(raw: Mapping[str, object], where: str) -> dict[str, object]:
    """Upgrade any Harbor task.toml to schema 1.4 without changing what it means.

    Mirrors Harbor's own legacy handling: ``version`` -> ``schema_version``, ``memory``/``storage``
    size strings -> ``memory_mb``/``storage_mb``, ``allow_internet`` -> ``network_mode``.
    """
    cfg = copy.deepcopy(dict(raw))
    if "version" in cfg:
        legacy = cfg.pop("version")
        cfg.setdefault("schema_version", legacy)
    cfg["schema_version"] = CURRENT_SCHEMA_VERSION
    for label, env in _environment_tables(cfg):
        _migrate_environment(env, f"{where}: [{label}]")
    return cfg


def _environment_tables(cfg: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    found: list[tuple[str, dict[str, object]]] = []
    if _is_table(env := cfg.get("environment")):
        found.append(("environment", env))
    verifier = cfg.get("verifier")
    if _is_table(verifier) and _is_table(env := verifier.get("environment")):
        found.append(("verifier.environment", env))
    steps = cfg.get("steps")
    for i, step in enumerate(steps if isinstance(steps, list) else []):  # anything else holds no table
        if _is_table(step):
            sv = step.get("verifier")
            if _is_table(sv) and _is_table(env := sv.get("environment")):
                found.append((f"steps[{i}].verifier.environment", env))
    return found


def _migrate_environment(env: dict[str, object], where: str) -> None:
    for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
        if old in env:
            value = env.pop(old)
            if isinstance(value, str):
                env.setdefault(new, _size_to_mb(value, f"{where} {old}"))
    if "allow_internet" in env:
        allow = env.pop("allow_internet")
        if allow is not None and "network_mode" not in env and "allowed_hosts" not in env:
            env["network_mode"] = "public" if allow else "no-network"


def _size_to_mb(text: str, where: str) -> int:
    s = text.strip().upper()
    factor = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(s[-1:]) if s else None
    try:
        if factor is None:
            raise ValueError
        return int(float(s[:-1]) * factor)
    except ValueError:
        raise TaskError(f"{where} = {text!r} is not a size like '2G' or '512M'; use e.g. memory_mb = 2048") from None


class TaskWarning(UserWarning):
    """Something in a task that envevo reads past, said in one line (commands print it as `warning: …`)."""


# The top-level keys Harbor's TaskConfig reads (plus `version`, the older spelling of schema_version); any other is
# ignored by Harbor, silently: most often a misspelt table.
KNOWN_TOP_LEVEL = ("schema_version", "version", "task", "metadata", "verifier", "agent", "environment", "solution",
                   "source", "multi_step_reward_strategy", "steps", "artifacts")


def check_schema(raw: Mapping[str, object], where: str) -> None:
    """A task.toml as written: a schema_version of another major is refused (its meaning is unknown), a newer minor
    and each unknown top-level key get a warning line."""
    version = raw.get("schema_version", raw.get("version"))
    if isinstance(version, str):
        m = re.fullmatch(r"\s*(\d+)(?:\.(\d+))?(?:\.\d+)?\s*", version)
        current = tuple(int(x) for x in CURRENT_SCHEMA_VERSION.split("."))
        if m is None or int(m[1]) != current[0]:
            raise TaskError(f'{where}: schema_version "{version}" is not one envevo reads (it reads 1.0 to '
                            f'{CURRENT_SCHEMA_VERSION}); fix: write the task in schema 1.x, or use an envevo that reads it')
        if int(m[2] or 0) > current[1]:
            warnings.warn(f'{where}: schema_version "{version}" is newer than {CURRENT_SCHEMA_VERSION}, the newest envevo '
                          "reads; settings it does not know are ignored", TaskWarning, stacklevel=2)
    for key in raw:
        if key not in KNOWN_TOP_LEVEL:
            warnings.warn(f"{where}: unknown top-level key {key!r}, ignored by Harbor (a misspelt table?); known: "
                          f"{', '.join(KNOWN_TOP_LEVEL)}", TaskWarning, stacklevel=2)


def check_config(cfg: Mapping[str, object], where: str) -> None:
    """Loose validation: known tables are tables and the fields envevo reads have the right type."""
    for name in _TABLES:
        _expect_table(cfg, name, name, where)
    verifier = _table(cfg, "verifier")
    _expect_table(verifier, "environment", "verifier.environment", where)
    _expect_table(_table(cfg, "metadata"), ENVEVO_METADATA_KEY, "metadata.envevo", where)
    if "schema_version" in cfg and not isinstance(cfg["schema_version"], str):
        raise TaskError(f'{where}: schema_version must be a string like "1.4", got {cfg["schema_version"]!r}')
    if "version" in cfg and not isinstance(cfg["version"], str):
        raise TaskError(f'{where}: version must be a string like "1.0", got {cfg["version"]!r}')
    task = _table(cfg, "task")
    if "name" in task and not isinstance(task["name"], str):
        raise TaskError(f"{where}: [task] name must be a string like 'org/name'")
    _check_phase(_table(cfg, "agent"), "agent", where)
    _check_phase(verifier, "verifier", where)
    for label, env in (("environment", _table(cfg, "environment")), ("verifier.environment", _table(verifier, "environment"))):
        _check_environment(env, label, where)
    _check_artifacts(cfg.get("artifacts"), "artifacts", where)
    _check_steps(cfg.get("steps"), where)


def value_at(node: object, *keys: str) -> object:
    """``node[k1][k2]…`` through nested tables; None where a level is missing or not a table."""
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _table(parent: Mapping[str, object], key: str) -> Mapping[str, object]:
    """`parent[key]`, a table once `_expect_table` has checked it; {} where it is absent (or empty)."""
    value = parent.get(key)
    return value if _is_table(value) else {}


def _expect_table(parent: Mapping[str, object], key: str, label: str, where: str) -> None:
    if key in parent and not isinstance(parent[key], dict):
        raise TaskError(f"{where}: [{label}] must be a table, got {type(parent[key]).__name__}; write it as a [{label}] section")


def _check_phase(table: Mapping[str, object], label: str, where: str) -> None:
    value = table.get("timeout_sec")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
        raise TaskError(f"{where}: [{label}] timeout_sec must be a positive number of seconds, got {value!r}")


def _check_environment(env: Mapping[str, object], label: str, where: str) -> None:
    image = env.get("docker_image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise TaskError(f"{where}: [{label}] docker_image must be a non-empty image name string, got {image!r}")
    os_name = env.get("os")
    if os_name is not None and (not isinstance(os_name, str) or os_name.lower() not in ("linux", "windows")):
        raise TaskError(f"{where}: [{label}] os must be 'linux' or 'windows', got {os_name!r}")
    build = env.get("build_timeout_sec")
    if build is not None and (isinstance(build, bool) or not isinstance(build, (int, float))):
        raise TaskError(f"{where}: [{label}] build_timeout_sec must be a number, got {build!r}")


def _check_artifacts(artifacts: object, label: str, where: str) -> None:
    if artifacts is None:
        return
    if not isinstance(artifacts, list) or not all(isinstance(a, (str, dict)) for a in artifacts):
        raise TaskError(f"{where}: {label} must be a list of paths or {{ source = ... }} tables")
    for a in artifacts:
        if isinstance(a, dict) and not isinstance(a.get("source"), str):
            raise TaskError(f"{where}: every table in {label} needs a string 'source'")


def _check_steps(steps: object, where: str) -> None:
    if steps is None:
        return
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise TaskError(f"{where}: steps must be an array of [[steps]] tables")
    seen: set[str] = set()
    for i, step in enumerate(steps):
        name = step.get("name")
        if not isinstance(name, str) or not name.strip():
            raise TaskError(f"{where}: [[steps]] #{i + 1} needs a string 'name'")
        if name in (".", "..") or _BAD_STEP_CHARS.search(name) or name.endswith((".", " ")):
            raise TaskError(
                f"{where}: step name {name!r} is not a portable directory name "
                "(no '/', '\\', '..', control characters or trailing dots); rename the step"
            )
        if name.casefold() in seen:
            raise TaskError(f"{where}: step name {name!r} is used twice; step names must be unique")
        seen.add(name.casefold())
        for phase in ("agent", "verifier"):
            _expect_table(step, phase, f"steps.{phase}", where)
            _check_phase(step.get(phase) or {}, f"steps.{name}.{phase}", where)
        sv = step.get("verifier") or {}
        _expect_table(sv, "environment", f"steps.{name}.verifier.environment", where)
        _check_environment(sv.get("environment") or {}, f"steps.{name}.verifier.environment", where)
        _check_artifacts(step.get("artifacts"), f"steps.{name}.artifacts", where)
