"""Host variables a task's task.toml pulls in through Harbor's ``${VAR}`` templates, and the rule that keeps the host's
environment out of tasks: a template resolves only for a name the user passed (``--pass-env NAME``, or ``pass_env``
under ``[sandbox]`` in envevo.toml).

``[verifier] env = { ANTHROPIC_API_KEY = "${ANTHROPIC_API_KEY}" }`` asks the host for a variable when the trial runs.
envevo runs third-party and model-written tasks, so none may read the host's environment unless the user says so:
the runtime hands Harbor a copy whose task.toml holds the resolved values (a passed name: the host's value; any other
``${VAR:-default}``: its default, never the host's), and refuses a task whose template names a variable not passed,
before any container starts. The passed names travel in ``ENVEVO_PASS_ENV`` so that worker processes see them too.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path

from pydantic import BaseModel

from envevo.errors import TaskError
from envevo.task._config import value_at

# Harbor's template (harbor.utils.env): the whole value is ``${VAR}`` or ``${VAR:-default}``.
_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
#: The names the user passed, comma-separated; set by the CLI (`pass_host_env`), inherited by worker processes.
PASS_ENV_VAR = "ENVEVO_PASS_ENV"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class HostEnvNeed(BaseModel):
    """One host variable a phase of the task asks for: ``[verifier] env.KEY = "${VAR}"``, not passed (or passed
    but unset on this host)."""

    phase: str  # verifier, solution or environment
    key: str
    var: str
    passed: bool = False  # passed with --pass-env but unset on this host


def passed_names(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The host variables the user passed to tasks."""
    env = os.environ if environ is None else environ
    return frozenset(n for n in env.get(PASS_ENV_VAR, "").split(",") if n)


def pass_host_env(names: Collection[str]) -> None:
    """Let tasks read these host variables (and only these) for the rest of this process and its workers."""
    bad = [n for n in names if not _NAME.fullmatch(n)]
    if bad:
        raise TaskError(f"--pass-env {bad[0]!r} is not a variable name; pass NAME (letters, digits, _)")
    os.environ[PASS_ENV_VAR] = ",".join(sorted(set(names)))


def pass_env_in_config(path: str | os.PathLike[str] | None) -> list[str]:
    """``pass_env = [...]`` under ``[sandbox]`` of envevo.toml (absent file or key: none)."""
    if path is None or not Path(path).is_file():
        return []
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise TaskError(f"cannot read {path}: {e}; fix the file") from None
    names = (data.get("sandbox") or {}).get("pass_env", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TaskError(f'{path}: [sandbox] pass_env must be a list of variable names, e.g. ["HF_TOKEN"]')
    return names


def _env_tables(config: Mapping[str, object]) -> list[tuple[str, object]]:
    tables = [("verifier", value_at(config, "verifier", "env")), ("solution", value_at(config, "solution", "env")),
              ("environment", value_at(config, "environment", "env")),
              ("verifier", value_at(config, "verifier", "environment", "env"))]
    steps = config.get("steps")
    for step in steps if isinstance(steps, list) else []:
        tables.append(("verifier", value_at(step, "verifier", "env")))
        tables.append(("solution", value_at(step, "solution", "env")))
    return tables


def host_env_refs(config: Mapping[str, object]) -> list[tuple[str, str, str, str | None]]:
    """Every ``${VAR}`` / ``${VAR:-default}`` template in the env tables: (phase, key, VAR, default or None)."""
    refs = []
    for phase, table in _env_tables(config):
        if isinstance(table, dict):
            for key, value in table.items():
                if isinstance(value, str) and (m := _TEMPLATE.fullmatch(value)):
                    refs.append((phase, str(key), m[1], m[2]))
    return refs


def host_env_needs(config: Mapping[str, object], environ: Mapping[str, str] | None = None,
                   passed: Collection[str] | None = None) -> list[HostEnvNeed]:
    """The templates without a default whose variable was not passed, or was passed but is unset here."""
    env = os.environ if environ is None else environ
    allowed = passed_names(env) if passed is None else passed
    found: list[HostEnvNeed] = []
    for phase, key, var, default in host_env_refs(config):
        if default is None and (var not in allowed or var not in env):
            if not any(n.phase == phase and n.var == var for n in found):
                found.append(HostEnvNeed(phase=phase, key=key, var=var, passed=var in allowed))
    return found


def host_env_refusal(needs: list[HostEnvNeed]) -> str:
    """One line: which variables the task asks the host for, and the fix."""
    names = list(dict.fromkeys(n.var for n in needs))
    unset = [n.var for n in needs if n.passed]
    if unset:
        return f"the task needs {', '.join(unset)}, passed but unset on this host; export it, then run again"
    flags = " ".join(f"--pass-env {v}" for v in names)
    return (f"the task asks for host variable{'s' if len(names) > 1 else ''} {', '.join(names)}; tasks see no host "
            f"variable unless passed: add {flags} (or pass_env under [sandbox] in envevo.toml)")


def resolve_host_env(config: Mapping[str, object], environ: Mapping[str, str] | None = None,
                     passed: Collection[str] | None = None) -> dict[str, object]:
    """`config` with every template replaced by its value: a passed variable's host value, else its default. A
    template with neither is a :class:`TaskError` naming the variable (no container may start)."""
    env = os.environ if environ is None else environ
    allowed = passed_names(env) if passed is None else passed
    needs = host_env_needs(config, env, allowed)
    if needs:
        raise TaskError(host_env_refusal(needs))

    def value(text: object) -> object:
        if isinstance(text, str) and (m := _TEMPLATE.fullmatch(text)):
            resolved = env[m[1]] if m[1] in allowed and m[1] in env else m[2]
            if resolved is not None and _TEMPLATE.fullmatch(resolved):  # Harbor would resolve it from the host
                raise TaskError(f"{text!r} resolves to another template, {resolved!r}; tasks see no host variable "
                                "unless passed: write a literal default")
            return resolved
        return text

    def walk(node: object, in_env: bool) -> object:
        if isinstance(node, dict):
            return {k: (walk(v, True) if k == "env" and isinstance(v, dict) else
                        value(v) if in_env else walk(v, False)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, False) for v in node]
        return node

    resolved = walk(dict(config), False)
    assert isinstance(resolved, dict)  # walk keeps a table a table
    return resolved


def host_env_resolved(task_dir: Path, dest_root: Path) -> Path:
    """The dir Harbor may run: `task_dir` itself when its task.toml names no host variable, else a private copy
    (0700, under `dest_root`) whose task.toml holds the resolved values. Refuses (TaskError) a variable not passed."""
    from envevo.task._config import render_toml

    toml = task_dir / "task.toml"
    try:
        config = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return task_dir  # Harbor reports what is wrong with it; it resolves nothing it cannot parse
    if not host_env_refs(config):
        return task_dir
    resolved = resolve_host_env(config)
    dest_root.mkdir(mode=0o700, parents=True, exist_ok=True)
    copy = Path(tempfile.mkdtemp(prefix="host-env-", dir=dest_root)) / task_dir.name  # mkdtemp: 0700
    shutil.copytree(task_dir, copy, symlinks=True)
    fd = os.open(copy / "task.toml", os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(render_toml(resolved))
    os.chmod(copy / "task.toml", 0o600)
    return copy
