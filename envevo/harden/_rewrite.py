"""The hardened copy of a task, built in memory: tests in a separate verifier, the chosen artifacts declared, the
tests' downloads installed at build time, and `[metadata.envevo.hardened]` saying what was done and from what.

Harbor 0.26 builds a separate verifier with no `tests/Dockerfile` from the task's own `environment/` (a fresh
copy of the agent's image, tests uploaded), so the downloads go into `environment/Dockerfile`: the verifier's
image is the agent's, plus the test tools, and nothing the agent does reaches it.
"""

from __future__ import annotations

import re

from envevo import __version__
from envevo.harden._artifacts import Artifact
from envevo.harden._scan import Download, uvx_warmup
from envevo.task import Task

TOOLS_SCRIPT = "envevo-test-tools.sh"
_TOOLS_IN_IMAGE = "/usr/local/share/envevo-harden/test-tools.sh"
_USER = re.compile(r"^\s*USER\s+(\S+)", re.IGNORECASE | re.MULTILINE)


def is_separate(task: Task) -> bool:
    verifier = task.config.get("verifier") or {}
    mode = verifier.get("environment_mode") or ("separate" if verifier.get("environment") is not None else None)
    return mode == "separate"


def _tools_script(downloads: list[Download]) -> str:
    lines = ["#!/bin/bash",
             "# Written by envevo harden from the tests' scripts: what they fetched while grading, run at build time",
             "# so the separate verifier needs no network. set -e: a failing install fails the build, visibly.",
             "set -e"]
    for d in downloads:
        if d.action == "kept":
            continue
        if d.kind == "uvx":
            warm = uvx_warmup(d.command)
            if warm:
                lines.append(f"{warm}  # {d.file}:{d.line}, the tools resolved into uv's cache")
            continue
        lines.append(f"{d.command}  # {d.file}:{d.line}")
    return "\n".join(lines) + "\n"


def _dockerfile(text: str) -> str:
    users = _USER.findall(text)
    last = users[-1] if users else None
    block = ["", "# envevo harden: the tests' downloads, installed at build time (the separate verifier runs offline)"]
    if last and last not in ("root", "0"):
        block.append("USER root")
    block += [f"COPY {TOOLS_SCRIPT} {_TOOLS_IN_IMAGE}", f"RUN bash {_TOOLS_IN_IMAGE}"]
    if last and last not in ("root", "0"):
        block.append(f"USER {last}")
    return text.rstrip("\n") + "\n" + "\n".join(block) + "\n"


def _blank_moved(script: str, moved: list[Download]) -> str:
    """test.sh with each moved line replaced by a no-op that says where it went (its line count kept)."""
    lines = script.split("\n")
    for d in moved:
        first = d.line - 1
        n = 1
        while first + n - 1 < len(lines) and lines[first + n - 1].endswith("\\"):
            n += 1
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        note = f"{indent}: # envevo harden: installed at build time (environment/{TOOLS_SCRIPT}): {d.command[:120]}"
        lines[first:first + n] = [note] + [f"{indent}:"] * (n - 1)
    return "\n".join(lines)


def move_downloads(task: Task, downloads: list[Download]) -> tuple[list[str], list[str]]:
    """Install the tests' downloads at build time, in place on `task`. (changes made, why some could not move)."""
    changes: list[str] = []
    cannot: list[str] = [f"{d.file}:{d.line} `{d.command[:80]}`: {d.note}" for d in downloads
                         if d.action == "kept" and d.kind != "offline"]
    active = [d for d in downloads if d.action != "kept"]
    fetching = [d for d in active if d.kind not in ("venv", "path-setup")]
    if not fetching:
        return changes, cannot
    if not task.has("environment/Dockerfile"):
        cannot.append("the environment is an image, not a Dockerfile: the tests' downloads cannot be installed at "
                      "build time; the verifier keeps the task's network")
        return changes, cannot
    task.write(f"environment/{TOOLS_SCRIPT}", _tools_script(active), executable=True)
    task.write("environment/Dockerfile", _dockerfile(task.read_text("environment/Dockerfile")))
    for file in sorted({d.file for d in active if d.action == "moved"}):
        task.write(file, _blank_moved(task.read_text(file), [d for d in active if d.action == "moved" and d.file == file]))
    for d in active:
        verb = {"moved": "installed at build time", "replayed": "also run at build time"}[d.action]
        changes.append(f"{d.file}:{d.line} `{d.command[:80]}`: {verb}")
    return changes, cannot


def harden_config(task: Task, artifacts: list[Artifact], *, offline: bool, uv_offline: bool) -> list[str]:
    """Separate verifier, artifacts declared, the verifier's network off when nothing it runs needs it."""
    config = dict(task.config)
    verifier = dict(config.get("verifier") or {})
    changes = []
    if not is_separate(task):
        verifier["environment_mode"] = "separate"
        changes.append('[verifier] environment_mode = "separate": the tests run in a fresh container built from '
                       "environment/, not in the agent's")
    existing = list(config.get("artifacts") or [])
    have = {a if isinstance(a, str) else a.get("source") for a in existing}
    new = [a.path for a in artifacts if a.path not in have]
    if new:
        config["artifacts"] = existing + new
        changes += [f"artifact {a.path}: {a.why}" for a in artifacts if a.path in new]
    if offline and verifier.get("network_mode") != "no-network":
        # Harbor starts a container with one network policy: the separate verifier's own environment (a copy of the
        # task's, same build) is declared without network, and its phase too.
        venv = dict(verifier.get("environment") or config.get("environment") or {})
        venv.pop("allow_internet", None)
        venv["network_mode"] = "no-network"
        verifier["environment"] = venv
        verifier["network_mode"] = "no-network"
        verifier.pop("allow_internet", None)
        changes.append('[verifier] network_mode = "no-network" and [verifier.environment] (the task\'s own, without '
                       "network): the tests need nothing from the network")
    if uv_offline:
        env = dict(verifier.get("env") or {})
        env["UV_OFFLINE"] = "1"
        verifier["env"] = env
        changes.append("[verifier] env UV_OFFLINE = 1: uvx runs the tools cached at build time")
    config["verifier"] = verifier
    task.set_config(config)
    return changes


def record_provenance(task: Task, source_hash: str, source_format: str, changes: list[str],
                      artifacts: list[Artifact]) -> None:
    """`[metadata.envevo.hardened]`: what this copy was hardened from, by which envevo, and each change."""
    task.update_envevo_metadata(hardened={
        "from_content_hash": source_hash,
        "from_format": source_format,
        "envevo_version": __version__,
        "changes": changes,
        "artifacts": [{"path": a.path, "why": a.why} for a in artifacts],
    })

