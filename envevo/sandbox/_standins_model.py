"""What a stand-in is: the Debian suite tables, the plan and the registry entry, the suite a Python or Ubuntu
tag maps to, and the registry file (``home()/standins.json``).

Separate so that _standins, _standins_toolchains and _standins_engine share these without an import cycle.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from envevo.sandbox import _paths
from envevo.sandbox._refs import parse_ref

SUITE_PYTHON = {"bookworm": "3.11", "trixie": "3.13"}  # the python3 each buildable suite ships
STANDIN_REPO = "localhost/envevo-standin"
LABEL = "envevo.standin"
# Ubuntu release -> nearest buildable Debian suite (by age of glibc and toolchain).
_UBUNTU = {"20.04": "bookworm", "focal": "bookworm", "22.04": "bookworm", "jammy": "bookworm",
           "24.04": "trixie", "noble": "trixie", "24.10": "trixie", "25.04": "trixie", "25.10": "trixie",
           "26.04": "trixie", "latest": "trixie", "rolling": "trixie"}
# What each buildable suite packages: Go (golang-go) and Node.js (nodejs), (major, minor).
SUITE_GO = {"bookworm": (1, 19), "trixie": (1, 24)}
SUITE_NODE = {"bookworm": (18, 20), "trixie": (20, 19)}

Progress = Callable[[str], None]
Kind = Literal["debian", "python", "ubuntu", "tbench-python", "tbench-ubuntu", "golang", "node", "uv"]


class StandinPlan(BaseModel):
    """How one reference would be stood in for: which Debian suite, which variant, and why."""

    source: str  # the reference as the task writes it
    tag: str  # the standard name the stand-in is tagged under
    kind: Kind
    suite: str  # the Debian suite; "" for uv, which has no OS
    variant: Literal["slim", "full"] = "slim"
    requested: str = ""  # "Python 3.12", "Ubuntu 24.04", "Go 1.22", "uv 0.9"
    version: str = ""  # uv: the version the tag names ("0.9.26", "0.9", "" for latest)
    notes: list[str] = Field(default_factory=list)

    @property
    def base(self) -> str:
        """The Debian image everything but uv starts from."""
        return f"docker.io/library/debian:{self.suite}-slim"

    @property
    def needs_debian(self) -> bool:
        return self.kind != "uv"

    @property
    def parent(self) -> StandinPlan | None:
        """The stand-in layer a Terminal-Bench base is built on (python or ubuntu), None for the others."""
        if self.kind == "tbench-python":
            return StandinPlan(source=self.source, tag=self.tag, kind="python", suite=self.suite, requested=self.requested)
        if self.kind == "tbench-ubuntu":
            return StandinPlan(source=self.source, tag=self.tag, kind="ubuntu", suite=self.suite, requested=self.requested)
        return None

    @property
    def build_tag(self) -> str:
        """The shared image several tags of one (kind, suite, variant) are built from."""
        if self.kind in ("python", "ubuntu"):
            return f"{STANDIN_REPO}:{self.kind}-{self.suite}-{self.variant}"
        if self.kind == "uv":
            return self.tag
        return f"{STANDIN_REPO}:{self.kind}-{self.suite}"

    def label(self) -> str:
        """The label text before the build, when only the suite's minor version is known."""
        if self.kind == "uv":
            return f"{_short(self.tag)} → uv {self.version or 'latest'} from PyPI's uv wheel"
        what = f"Debian {self.suite}"
        if self.kind in ("python", "tbench-python"):
            what += f", Python {SUITE_PYTHON[self.suite]}"
        if self.kind == "golang":
            what += ", Go " + ".".join(map(str, SUITE_GO[self.suite]))
        if self.kind == "node":
            what += ", Node.js " + ".".join(map(str, SUITE_NODE[self.suite]))
        if self.kind.startswith("tbench-"):
            what += ", tmux, asciinema"
        return f"{_short(self.tag)} → {what}"


class StandinEntry(BaseModel):
    """A built stand-in, as recorded in ``home()/standins.json``."""

    tag: str
    source: str
    became: str  # "Debian trixie 13.2, Python 3.13.5"
    notes: list[str] = Field(default_factory=list)
    image_id: str
    kind: str
    suite: str
    built_at: float = Field(default_factory=time.time)

    def statement(self, reference: str | None = None) -> str:
        ref = reference or _short(self.tag)
        text = f"{ref} → {self.became}"
        extra = list(self.notes)
        try:
            digest = parse_ref(ref).digest
        except ValueError:
            digest = None
        if digest:
            extra.append(f"digest {digest[:19]}… not verified")
        return text + (f" ({'; '.join(extra)})" if extra else "")


def _short(tag: str) -> str:
    return tag.removeprefix("docker.io/library/")


def choose_python_suite(version: str | None, tag_suite: str | None = None) -> tuple[str, list[str]]:
    """The Debian suite for a requested Python (``"3.12"``, ``"3.11.9"``, None = latest) and the notes
    saying where it differs. 3.12 and newer → trixie (3.13), 3.11 and older → bookworm (3.11). A suite
    named in the tag is honoured only if it ships that Python."""
    notes: list[str] = []
    minor: tuple[int, ...] | None = None
    if version:
        parts = tuple(int(p) for p in version.split("."))
        if parts[0] != 3:
            raise ValueError(f"Python {version} cannot be stood in (Debian ships Python 3 only)")
        minor = parts[:2] if len(parts) >= 2 else None
    want = ".".join(map(str, minor)) if minor else None
    if tag_suite and tag_suite in SUITE_PYTHON and (want is None or SUITE_PYTHON[tag_suite] == want):
        suite = tag_suite
    else:
        suite = "trixie" if minor is None or minor >= (3, 12) else "bookworm"
        if tag_suite:
            why = (f"{tag_suite} is not built here" if tag_suite not in SUITE_PYTHON
                   else f"{tag_suite} ships Python {SUITE_PYTHON[tag_suite]}")
            notes.append(f"tag names {tag_suite}, but {why}; using {suite}")
    have = SUITE_PYTHON[suite]
    if want and want != have:
        notes.append(f"Python {want} is not packaged in Debian; nearest is {have}")
    elif version and version.count(".") == 2:
        notes.append(f"exact patch release {version} not available")
    return suite, notes


def ubuntu_suite(tag: str) -> tuple[str, list[str]] | None:
    """The nearest buildable Debian suite for an Ubuntu tag, or None for an unknown one."""
    if tag in _UBUNTU:
        return _UBUNTU[tag], []
    m = re.match(r"^(\d{2})\.(\d{2})$", tag)
    if not m:
        return None
    year = int(m.group(1))
    suite = "bookworm" if year < 24 else "trixie"
    return suite, [f"Ubuntu {tag} is not in the table; nearest by release year is {suite}"]


# ---- registry ---------------------------------------------------------------------------------

def registry_path() -> Path:
    return _paths.home() / "standins.json"


def load_registry() -> dict[str, StandinEntry]:
    try:
        raw = json.loads(registry_path().read_text())
        return {k: StandinEntry.model_validate(v) for k, v in raw.items()}
    except (OSError, ValueError):
        return {}


def _record(entry: StandinEntry) -> None:
    reg = load_registry()
    reg[entry.tag] = entry
    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".standins-", suffix=".tmp")  # concurrent doctors
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps({k: v.model_dump() for k, v in sorted(reg.items())}, indent=2, ensure_ascii=False))
    os.replace(tmp, path)
