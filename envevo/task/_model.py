"""The Task model: a Harbor task directory held in memory."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envevo.errors import TaskError
from envevo.task._components import Component, component_of
from envevo.task._compose_file import check_compose_paths, parse_compose
from envevo.task._config import (
    ENVEVO_METADATA_KEY,
    check_config,
    migrate_config,
    parse_toml,
    render_toml,
)
from envevo.task._files import TaskFile, decode_text, safe_relpath
from envevo.task._hash import hash_files

CONFIG_FILE = "task.toml"
SourceFormat = Literal["harbor", "terminal-bench-1", "memory"]


class Task(BaseModel):
    """A Harbor task: its files and its task.toml.

    ``files`` holds every file except task.toml, keyed by posix path relative to the task dir.
    ``config`` is the raw task.toml dict (migrated to the current schema), so fields envevo does
    not know survive a save. ``config_text`` is the original task.toml text, written back verbatim
    (comments and all) for as long as ``config`` is unchanged.
    """

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    files: dict[str, TaskFile] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=lambda: {"schema_version": "1.4"})
    config_text: str | None = None
    source: Path | None = None
    source_format: SourceFormat = "memory"

    # ---- identity -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        task = self.config.get("task")
        name = task.get("name") if isinstance(task, dict) else None
        if isinstance(name, str):
            return name
        return self.source.name if self.source is not None else "task"

    def content_hash(self) -> str:
        """sha256 of the task as :func:`save` would write it; equal tasks hash equal on any machine."""
        return hash_files(self.render_files())

    # ---- task.toml ------------------------------------------------------------------------
    def config_toml(self) -> str:
        if self.config_text is not None:
            try:
                if tomllib.loads(self.config_text) == self.config:
                    return self.config_text
            except tomllib.TOMLDecodeError:
                pass
        return render_toml(self.config)

    def set_config(self, config: Mapping[str, object]) -> None:
        """Replace task.toml's contents; older schema fields are migrated to the current ones."""
        check_config(config, CONFIG_FILE)
        self.config = migrate_config(config, CONFIG_FILE)

    def render_files(self) -> dict[str, TaskFile]:
        """All files as written to disk, task.toml included."""
        out = dict(self.files)
        out[CONFIG_FILE] = TaskFile(data=self.config_toml().encode("utf-8"))
        return out

    # ---- files ------------------------------------------------------------------------------
    def paths(self, component: Component | None = None) -> list[str]:
        """Sorted relative paths of all files (task.toml included), optionally of one component."""
        return sorted(p for p in self.render_files() if component is None or component_of(p) == component)

    def has(self, path: str) -> bool:
        rel = safe_relpath(path)
        return rel == CONFIG_FILE or rel in self.files

    def read_bytes(self, path: str) -> bytes:
        rel = safe_relpath(path)
        if rel == CONFIG_FILE:
            return self.config_toml().encode("utf-8")
        try:
            return self.files[rel].data
        except KeyError:
            raise TaskError(f"task {self.name} has no file {rel}") from None

    def read_text(self, path: str) -> str:
        text = decode_text(self.read_bytes(path))
        if text is None:
            raise TaskError(f"{path} in task {self.name} is not UTF-8 text; it looks binary")
        return text

    def write(self, path: str, data: bytes | str, *, executable: bool | None = None) -> None:
        """Add or replace a file. ``executable=None`` keeps the current bit (new files: on for *.sh).

        Writing task.toml re-parses it into ``config``. Paths with ``..`` or absolute paths are
        rejected, so nothing written through a Task can land outside its directory.
        """
        rel = safe_relpath(path)
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        if rel == CONFIG_FILE:
            text = decode_text(raw)
            if text is None:
                raise TaskError("task.toml must be UTF-8 text")
            parsed = parse_toml(text, CONFIG_FILE)
            check_config(parsed, CONFIG_FILE)
            self.config = migrate_config(parsed, CONFIG_FILE)
            self.config_text = text
            return
        for existing in self.files:
            if existing.startswith(rel + "/") or rel.startswith(existing + "/"):
                raise TaskError(f"cannot write {rel}: {existing} is in the way (a file and a directory cannot share a path)")
        if executable is None:
            old = self.files.get(rel)
            executable = old.executable if old is not None else rel.endswith(".sh")
        self.files[rel] = TaskFile(data=raw, executable=executable)

    def remove(self, path: str) -> None:
        """Remove a file, or every file under a directory path."""
        rel = safe_relpath(path)
        if rel == CONFIG_FILE:
            raise TaskError("task.toml cannot be removed; every Harbor task has one")
        doomed = [p for p in self.files if p == rel or p.startswith(rel + "/")]
        if not doomed:
            raise TaskError(f"task {self.name} has no file or directory {rel}")
        for p in doomed:
            del self.files[p]

    # ---- structure ------------------------------------------------------------------------
    @property
    def step_names(self) -> list[str]:
        return [s["name"] for s in self.config.get("steps") or [] if isinstance(s, dict) and "name" in s]

    @property
    def is_multi_step(self) -> bool:
        return bool(self.step_names)

    @property
    def instruction(self) -> str:
        """What the agent is asked to do. Multi-step tasks join their step instructions in order."""
        if not self.is_multi_step:
            return self.read_text("instruction.md")
        return "\n\n".join(
            f"## Step {name}\n\n{self.read_text(f'steps/{name}/instruction.md')}" for name in self.step_names
        )

    @property
    def docker_image(self) -> str | None:
        env = self.config.get("environment") or {}
        return env.get("docker_image") or None

    # ---- envevo's own metadata ---------------------------------------------------------------
    @property
    def envevo_metadata(self) -> dict[str, Any]:
        """A copy of ``[metadata.envevo]`` (empty if absent)."""
        meta = (self.config.get("metadata") or {}).get(ENVEVO_METADATA_KEY) or {}
        return copy.deepcopy(meta)

    def set_envevo_metadata(self, data: Mapping[str, object]) -> None:
        """Replace ``[metadata.envevo]``; values must be representable in TOML (no None)."""
        new = copy.deepcopy(self.config)
        metadata = new.setdefault("metadata", {})
        if data:
            metadata[ENVEVO_METADATA_KEY] = copy.deepcopy(dict(data))
        else:
            metadata.pop(ENVEVO_METADATA_KEY, None)
            if not metadata:
                del new["metadata"]
        try:
            render_toml(new)
        except (TypeError, ValueError, AssertionError) as e:
            raise TaskError(f"envevo metadata cannot be stored in task.toml: {e}; use strings, numbers, lists and tables") from e
        self.config = new

    def update_envevo_metadata(self, **values: object) -> None:
        merged = self.envevo_metadata
        merged.update(values)
        self.set_envevo_metadata(merged)

    # ---- validation -------------------------------------------------------------------------
    def check(self) -> None:
        """Raise TaskError naming the first thing that keeps this from being a runnable Harbor task."""
        where = self._where()
        check_config(self.config, f"{where}/task.toml")
        env_cfg = self.config.get("environment") or {}
        verifier = self.config.get("verifier") or {}
        os_name = str(env_cfg.get("os") or "linux").lower()
        test_name = "test.bat" if os_name == "windows" else "test.sh"

        if self.is_multi_step:
            for step in self.config["steps"]:
                name = step["name"]
                if not self._require_text(f"steps/{name}/instruction.md", where).strip():
                    raise TaskError(f"{where}: steps/{name}/instruction.md is empty; write what the agent is asked to do")
                levels = [(step.get("verifier") or {}, f"steps/{name}/tests"), (verifier, "tests")]
                if not self._bundled_tests(levels):
                    if f"steps/{name}/tests/{test_name}" not in self.files and f"tests/{test_name}" not in self.files:
                        raise TaskError(
                            f"{where}: step {name!r} has no test script; add steps/{name}/tests/{test_name} or tests/{test_name} "
                            "that writes /logs/verifier/reward.txt"
                        )
        else:
            if not self._require_text("instruction.md", where).strip():
                raise TaskError(f"{where}: instruction.md is empty; write what the agent is asked to do")
            if not self._bundled_tests([(verifier, "tests")]) and f"tests/{test_name}" not in self.files:
                raise TaskError(f"{where}: missing tests/{test_name}; add a test script that writes /logs/verifier/reward.txt")

        has_build = any(f"environment/{n}" in self.files for n in ("Dockerfile", "docker-compose.yaml"))
        if not has_build and not self.docker_image:
            raise TaskError(
                f"{where}: no environment; add environment/Dockerfile or environment/docker-compose.yaml, "
                "or set docker_image under [environment] in task.toml"
            )

        for path in self.files:
            base = path.rsplit("/", 1)[-1]
            if (base == "test.sh" and "/tests/" in f"/{path}") or (base == "solve.sh" and "/solution/" in f"/{path}"):
                self._require_text(path, where)
            if base in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"):
                text = self._require_text(path, where)
                check_compose_paths(parse_compose(text, f"{where}/{path}"), path, f"{where}/{path}")

    def _bundled_tests(self, levels: list[tuple[Mapping[str, object], str]]) -> bool:
        """Whether a separate verifier container carries its own tests (then no test script is needed).

        ``levels`` are (verifier table, tests dir) pairs, most specific first (step, then task),
        resolved the way Harbor's verifier_mode does.
        """
        mode = None
        for verifier, _ in levels:
            mode = verifier.get("environment_mode") or ("separate" if verifier.get("environment") is not None else None)
            if mode is not None:
                break
        if mode != "separate":
            return False
        for verifier, tests_dir in levels:
            env = verifier.get("environment")
            if isinstance(env, dict) and env.get("docker_image"):
                return True
            if any(f"{tests_dir}/{n}" in self.files for n in ("Dockerfile", "docker-compose.yaml")):
                return True
        return False

    def _require_text(self, path: str, where: str) -> str:
        f = self.files.get(path)
        if f is None:
            raise TaskError(f"{where}: missing {path}; every Harbor task needs it")
        text = decode_text(f.data)
        if text is None:
            raise TaskError(f"{where}: {path} is not UTF-8 text (it looks binary); save it as UTF-8 text")
        return text

    def _where(self) -> str:
        return str(self.source) if self.source is not None else f"task {self.name}"
