"""Does an edited task keep what made its parent safe to train on? Read from the files, before any container runs.

A parent whose tests run in a separate verifier (hardened by `envevo harden`, or written so) keeps the agent away
from the reward only while its edits keep three things: the verifier's mode (`separate`), the verifier's own
environment (its image, its network policy), and artifacts covering every file the tests read that the solution
writes (a separate verifier sees nothing else of the agent's container). `lost_hardening` names each one a
candidate gives up, with the fix, so an LLM Modifier can be told why its candidate was rejected.

Host-side only: the files are read as text. The output rule is a static reading (a path the tests name, the
solution names, the environment does not provide, and no artifact covers): it compares the candidate with its
parent, so only what the edit introduced is blamed.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex

from envevo.harden._rewrite import is_separate
from envevo.harden._scan import named_paths
from envevo.task import Task

_COPY = re.compile(r"^\s*(?:COPY|ADD)\s+(.+)$", re.IGNORECASE | re.MULTILINE)
_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)", re.IGNORECASE | re.MULTILINE)
_TEXT_LIMIT = 1_000_000  # a bigger environment file is data: not read for names


def is_hardened(task: Task) -> bool:
    """The task's tests run in a separate verifier (or `envevo harden` wrote it)."""
    return is_separate(task) or "hardened" in task.envevo_metadata


def declared_artifacts(task: Task) -> list[str]:
    """The container paths task.toml declares as artifacts (string or `{source = …}` entries)."""
    out = []
    for a in task.config.get("artifacts") or []:
        source = a if isinstance(a, str) else (a.get("source") if isinstance(a, dict) else None)
        if isinstance(source, str) and source:
            out.append(posixpath.normpath(source))
    return out


def _covers(artifact: str, path: str) -> bool:
    """The verifier sees `path` through `artifact`: the same, inside it, or a directory holding it."""
    return path == artifact or path.startswith(artifact.rstrip("/") + "/") or artifact.startswith(path.rstrip("/") + "/")


def _texts(task: Task, prefix: str) -> str:
    parts = []
    for path, f in task.files.items():
        if path.startswith(prefix) and len(f.data) <= _TEXT_LIMIT:
            parts.append(f.data.decode("utf-8", "replace"))
    return "\n".join(parts)


def _copied_paths(task: Task) -> list[str]:
    """Image paths the Dockerfile's COPY/ADD lines put the task's environment/ files at."""
    if not task.has("environment/Dockerfile"):
        return []
    env_files = [p[len("environment/"):] for p in task.files if p.startswith("environment/")]
    workdir, out = "/", []
    for line in task.read_text("environment/Dockerfile").splitlines():
        if m := _WORKDIR.match(line):
            workdir = posixpath.join(workdir, m.group(1))
            continue
        if not (m := _COPY.match(line)) or "--from" in line:
            continue
        try:
            *sources, dest = [w for w in shlex.split(m.group(1)) if not w.startswith("--")]
        except ValueError:
            continue
        to_dir = dest.endswith("/") or len(sources) > 1
        dest = posixpath.normpath(posixpath.join(workdir, dest))
        for src in sources:
            src = posixpath.normpath(src).lstrip("/")
            src = "" if src == "." else src
            for rel in env_files:
                if not src or rel.startswith(src + "/"):  # a directory's contents land under dest
                    out.append(posixpath.join(dest, rel[len(src) + 1:] if src else rel))
                elif rel == src or fnmatch.fnmatch(rel, src):
                    out.append(posixpath.join(dest, posixpath.basename(rel)) if to_dir or rel != src else dest)
    return out


def unseen_outputs(task: Task) -> dict[str, str]:
    """Paths the tests read that the solution writes and no declared artifact covers, each with where the tests name
    it: what a separate verifier would not see. Paths the environment provides (named in its files, or copied in by
    the Dockerfile) are inputs, not outputs."""
    named, _ = named_paths(task)
    artifacts = declared_artifacts(task)
    solution = _texts(task, "solution/")
    environment = _texts(task, "environment/")
    copied = _copied_paths(task)
    out: dict[str, str] = {}
    for path, where in named.items():
        path = posixpath.normpath(path)
        if any(_covers(a, path) for a in artifacts):
            continue
        if path in environment or any(c == path or c.startswith(path + "/") or path.startswith(c + "/")
                                      for c in copied):
            continue
        base = posixpath.basename(path)
        written = path in solution or ("." in base and len(base) >= 4 and re.search(
            r"(?<![\w.-])" + re.escape(base) + r"(?![\w-])", solution) is not None)
        if written:
            out[path] = where
    return out


def _verifier(task: Task) -> dict:
    return dict(task.config.get("verifier") or {})


def lost_hardening(parent: Task, candidate: Task) -> list[str]:
    """Each way `candidate` gives up its parent's separate verifier, with the fix; empty when it keeps it (or when
    the parent never had one)."""
    if not is_hardened(parent):
        return []
    problems: list[str] = []
    if not is_separate(candidate):
        mode = _verifier(candidate).get("environment_mode") or "shared (Harbor's default)"
        return [f"[verifier] environment_mode is {mode} now, the parent's is \"separate\": the tests would run in the "
                "agent's own container, where an agent can forge the reward; keep environment_mode = \"separate\""]
    was, now = _verifier(parent).get("environment"), _verifier(candidate).get("environment")
    if was is not None and now is None:
        problems.append("the [verifier.environment] table (the separate verifier's own environment) was removed; "
                        "keep it as the parent has it")
    elif was is not None and now != was:
        keys = sorted(k for k in set(was) | set(now or {}) if was.get(k) != (now or {}).get(k))
        problems.append(f"[verifier.environment] changed ({', '.join(keys)}); keep the separate verifier's "
                        "environment as the parent has it")
    if _verifier(parent).get("network_mode") != _verifier(candidate).get("network_mode"):
        problems.append(f"[verifier] network_mode changed from {_verifier(parent).get('network_mode')!r} to "
                        f"{_verifier(candidate).get('network_mode')!r}; keep the parent's")
    if parent.has("tests/Dockerfile") and not candidate.has("tests/Dockerfile"):
        problems.append("tests/Dockerfile (the separate verifier's image) was removed; restore it")
    named, _ = named_paths(candidate)
    kept = declared_artifacts(candidate)
    for artifact in declared_artifacts(parent):
        if any(_covers(k, artifact) for k in kept):
            continue
        reads = [w for p, w in named.items() if _covers(artifact, posixpath.normpath(p))]
        if reads:
            problems.append(f"artifact {artifact} is no longer declared, yet the tests still read it ({reads[0]}): "
                            "the separate verifier would not see it; keep it in task.toml's artifacts")
    before = unseen_outputs(parent)
    for path, where in unseen_outputs(candidate).items():
        if path not in before and not any(path in p for p in problems):
            problems.append(f"the tests read {path} ({where}), which the solution writes, but no declared artifact "
                            f"covers it: the separate verifier would not see it; add \"{path}\" to artifacts in "
                            "task.toml")
    return problems
