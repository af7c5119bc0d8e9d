"""Local stand-ins for base images no registry can serve here, built from Debian packages and stated.

A stand-in is tagged under the standard name a task uses (``docker.io/library/python:3.12-slim``), so
task Dockerfiles stay standard, and it never pretends: each one carries a label and a registry entry
saying what it really is ("python:3.12-slim → Debian trixie, Python 3.13.5"), read from the built image.

- ``debian:<suite>[-slim]``: debootstrap minbase, imported (see _base_image).
- ``python:<ver>[-slim][-<suite>]``: that Debian suite plus python3, pip and venv, behaving like the
  official image (``python``/``pip`` on PATH, system-wide ``pip install`` allowed, pip upgradable).
- ``ubuntu:<ver>``: the nearest Debian suite, with the ``ubuntu`` user of recent Ubuntu images.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from envevo.errors import UserError
from envevo.sandbox import _paths
from envevo.sandbox._refs import ImageRef, parse_ref

if TYPE_CHECKING:
    from envevo.task import ImageMap, Task

SUITE_PYTHON = {"bookworm": "3.11", "trixie": "3.13"}  # the python3 each buildable suite ships
SUITE_NUMBER = {"11": "bullseye", "12": "bookworm", "13": "trixie"}
BUILDABLE_SUITES = ("bookworm", "trixie")
STANDIN_REPO = "localhost/envevo-standin"
LABEL = "envevo.standin"
# Ubuntu release -> nearest buildable Debian suite (by age of glibc and toolchain).
_UBUNTU = {"20.04": "bookworm", "focal": "bookworm", "22.04": "bookworm", "jammy": "bookworm",
           "24.04": "trixie", "noble": "trixie", "24.10": "trixie", "25.04": "trixie", "25.10": "trixie",
           "26.04": "trixie", "latest": "trixie", "rolling": "trixie"}
_PY_TAG = re.compile(r"^(?:(?P<ver>\d+(?:\.\d+){0,2}))?(?:-?(?P<slim>slim))?(?:-?(?P<suite>[a-z]+))?$")
_DEBIAN_TAG = re.compile(r"^(?P<suite>[a-z]+|\d+)(?:\.\d+)?(?:-\d{8})?(?P<slim>-slim)?$")

Progress = Callable[[str], None]


class StandinPlan(BaseModel):
    """How one reference would be stood in for: which Debian suite, which variant, and why."""

    source: str  # the reference as the task writes it
    tag: str  # the standard name the stand-in is tagged under
    kind: Literal["debian", "python", "ubuntu"]
    suite: str
    variant: Literal["slim", "full"] = "slim"
    requested: str = ""  # "Python 3.12", "Ubuntu 24.04"
    notes: list[str] = Field(default_factory=list)

    @property
    def base(self) -> str:
        return f"docker.io/library/debian:{self.suite}-slim"

    @property
    def build_tag(self) -> str:
        """The shared image several tags of one (kind, suite, variant) are built from."""
        return f"{STANDIN_REPO}:{self.kind}-{self.suite}-{self.variant}"

    def label(self) -> str:
        """The label text before the build, when only the suite's minor version is known."""
        what = f"Debian {self.suite}" + (f", Python {SUITE_PYTHON[self.suite]}" if self.kind == "python" else "")
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


# ---- planning (pure) --------------------------------------------------------------------------

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


def plan_standin(reference: str) -> StandinPlan | None:
    """The stand-in plan for a reference, or None when no stand-in can be built (see ``why_no_standin``)."""
    try:
        return _plan(parse_ref(reference))
    except ValueError:
        return None


def why_no_standin(reference: str) -> str:
    try:
        ref = parse_ref(reference)
        _plan(ref)
    except ValueError as exc:
        return str(exc)
    return f"no local stand-in is built for {reference} (only debian, python and ubuntu official images)"


def _plan(ref: ImageRef) -> StandinPlan | None:
    name, tag = ref.official, ref.tag or "latest"
    if name == "debian":
        m = _DEBIAN_TAG.match(tag)
        if not m:
            raise ValueError(f"debian tag {tag!r} does not name a suite")
        suite = SUITE_NUMBER.get(m["suite"], m["suite"])
        if suite in ("latest", "stable"):
            suite = "trixie"
        notes = [] if suite in BUILDABLE_SUITES else [f"{suite} is built by debootstrap untested"]
        return StandinPlan(source=ref.raw, tag=ref.standard, kind="debian", suite=suite,
                           requested=f"Debian {suite}", notes=notes)
    if name == "python":
        m = _PY_TAG.match("" if tag == "latest" else tag)
        if not m or (m["suite"] or "").startswith(("alpine", "windows", "nano")):
            raise ValueError(f"python:{tag} is not a Debian-based python tag; no stand-in can be built for it")
        suite, notes = choose_python_suite(m["ver"], m["suite"])
        return StandinPlan(source=ref.raw, tag=ref.standard, kind="python", suite=suite,
                           variant="slim" if m["slim"] else "full",
                           requested=f"Python {m['ver'] or 'latest'}", notes=notes)
    if name == "ubuntu":
        found = ubuntu_suite(tag)
        if found is None:
            raise ValueError(f"ubuntu:{tag} is not a known Ubuntu release")
        suite, notes = found
        return StandinPlan(source=ref.raw, tag=ref.standard, kind="ubuntu", suite=suite,
                           requested=f"Ubuntu {tag}", notes=notes)
    return None


# Kept out of the recipe's text only so the recipe's lines stay short; the recipe's bytes are unchanged.
_PIP_FROM_DEBIAN_WHEEL = ("python3 -m pip install --no-cache-dir --no-index --ignore-installed --root-user-action=ignore "
                          "--disable-pip-version-check /usr/share/python-wheels/pip-*.whl")


def containerfile(plan: StandinPlan) -> str:
    """The build recipe of a python or ubuntu stand-in (Debian ones come from debootstrap directly)."""
    if plan.kind == "python":
        extra = " build-essential python3-dev git curl wget procps" if plan.variant == "full" else ""
        return f"""\
FROM {plan.base}
# Official python images allow system-wide pip: drop Debian's EXTERNALLY-MANAGED marker, and put an
# upgradable pip (from Debian's own wheel, no network) in /usr/local, ahead of Debian's on PATH.
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-pip python3-venv ca-certificates{extra} \\
 && rm -rf /var/lib/apt/lists/* \\
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \\
 && {_PIP_FROM_DEBIAN_WHEEL} \\
 && ln -sf /usr/bin/python3 /usr/local/bin/python \\
 && python --version && pip --version
ENV LANG=C.UTF-8
CMD ["python3"]
"""
    if plan.kind == "ubuntu":
        # Ubuntu 23.04+ images (here: those on trixie) carry an 'ubuntu' user, uid 1000; bash and
        # coreutils are in Debian's minbase already.
        user = ("RUN if ! getent passwd 1000 >/dev/null; then useradd -m -u 1000 -s /bin/bash ubuntu; fi\n"
                if plan.suite == "trixie" else "")
        return f"FROM {plan.base}\n{user}CMD [\"/bin/bash\"]\n"
    raise ValueError(f"{plan.kind} stand-ins are not built from a Containerfile")


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


# ---- building ---------------------------------------------------------------------------------

def _run(args: list[str], timeout: float = 900, **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(args, 127, "", str(exc))


def image_info(engine: str, image: str) -> tuple[str, dict[str, str]] | None:
    """(image id, labels) of a local image, or None if it is not there."""
    proc = _run([engine, "image", "inspect", "--format", "{{.Id}} {{json .Labels}}", image], timeout=30)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    ident, _, labels = proc.stdout.strip().partition(" ")
    try:
        parsed = json.loads(labels) or {}
    except ValueError:
        parsed = {}
    return ident, parsed


def image_id(engine: str, image: str) -> str | None:
    info = image_info(engine, image)
    return info[0] if info else None


def _last_line(proc: subprocess.CompletedProcess) -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1][:240] if lines else f"exit status {proc.returncode}"


def _build(engine: str, text: str, tag: str, labels: dict[str, str], what: str) -> None:
    from envevo.runtime import host_ca_volume_args as volume_args

    with tempfile.TemporaryDirectory(prefix="envevo-standin-") as tmp:
        (Path(tmp) / "Containerfile").write_text(text)
        label_args = [a for k, v in labels.items() for a in ("--label", f"{k}={v}")]
        proc = _run([engine, "build", "-t", tag, *label_args, *volume_args(), tmp], timeout=1800)
    if proc.returncode != 0:
        raise UserError(f"building {what} failed: {_last_line(proc)}; check that http://deb.debian.org is reachable")


def _probe(engine: str, image: str, kind: str) -> tuple[str, str | None]:
    """(Debian version, Python version) read from the built image."""
    script = ("cat /etc/debian_version; "
              "command -v python3 >/dev/null && python3 -c 'import platform; print(platform.python_version())' || true")
    proc = _run([engine, "run", "--rm", "--network=none", image, "sh", "-c", script], timeout=120)
    lines = proc.stdout.split()
    if proc.returncode != 0 or not lines:
        raise UserError(f"the stand-in {image} does not start: {_last_line(proc)}")
    return lines[0], (lines[1] if len(lines) > 1 else None)


def ensure_standin(engine: str, reference: str, progress: Progress | None = None) -> StandinEntry:
    """Build (or reuse) the stand-in for ``reference`` and record it; returns its entry."""
    from envevo.sandbox._base_image import build_debian_image

    plan = plan_standin(reference)
    if plan is None:
        raise UserError(f"cannot stand in for {reference}: {why_no_standin(reference)}")
    say = progress or (lambda _msg: None)
    reg = load_registry()
    info = image_info(engine, plan.tag)
    if info is not None:
        if plan.tag in reg and info[0] == reg[plan.tag].image_id:
            return reg[plan.tag]
        if info[1].get(LABEL):  # ours, recorded under another ENVEVO_HOME or before the registry existed
            return _register(engine, plan, info[1][LABEL].split(" → ", 1)[-1])
        raise UserError(f"{plan.tag} exists locally and is not an envevo stand-in; envevo leaves it alone")
    base = f"docker.io/library/debian:{plan.suite}-slim"
    if image_id(engine, base) is None:
        say(f"building {base} with debootstrap (about 45 s)…")
        build_debian_image(engine, base)
    if plan.kind == "debian":
        if plan.tag != base:
            _run([engine, "tag", base, plan.tag])
        debian, _ = _probe(engine, plan.tag, "debian")
        became = f"Debian {plan.suite} {debian}, built locally with debootstrap (minbase)"
        return _register(engine, plan, became)
    if image_id(engine, plan.build_tag) is None:
        say(f"building the {plan.kind} stand-in on Debian {plan.suite}"
            + (" (apt over http, about 20-60 s)…" if plan.kind == "python" else "…"))
        _build(engine, containerfile(plan), plan.build_tag, {f"{LABEL}.base": base}, f"the {plan.kind} stand-in on {plan.suite}")
    debian, python = _probe(engine, plan.build_tag, plan.kind)
    became = f"Debian {plan.suite}" + (f", Python {python}" if plan.kind == "python" else f" {debian}")
    statement = f"{_short(plan.tag)} → {became}"
    env = f"ENV PYTHON_VERSION={python}\n" if plan.kind == "python" and python else ""
    _build(engine, f"FROM {plan.build_tag}\n{env}", plan.tag,
           {LABEL: statement, f"{LABEL}.source": plan.source}, f"the stand-in tag {plan.tag}")
    return _register(engine, plan, became)


def _register(engine: str, plan: StandinPlan, became: str) -> StandinEntry:
    new_id = image_id(engine, plan.tag)
    if new_id is None:
        raise UserError(f"the stand-in {plan.tag} was built but cannot be found; run 'envevo doctor --fix' again")
    entry = StandinEntry(tag=plan.tag, source=plan.source, became=became, notes=plan.notes,
                         image_id=new_id, kind=plan.kind, suite=plan.suite)
    _record(entry)
    return entry


# ---- use by verify ----------------------------------------------------------------------------

def standins_for(task: Task, engine: str = "podman") -> tuple[ImageMap, list[str]]:
    """What a local run of ``task`` substitutes: an image map for the runnable copy (digest-pinned or
    mirror-prefixed references → the local standard tag) and one stated line per substitution."""
    from envevo.task import ImageMap, task_images

    reg = load_registry()
    mapping: dict[str, str] = {}
    statements: list[str] = []
    infos: dict[str, tuple[str, dict[str, str]] | None] = {}
    for image in task_images(task):
        try:
            ref = parse_ref(image)
        except ValueError:
            continue
        if ref.standard not in infos:
            infos[ref.standard] = image_info(engine, ref.standard)
        info = infos[ref.standard]
        if info is None:
            continue
        local, labels = info
        # Podman finds a plain Docker Hub name locally by itself; a digest or another registry it would pull.
        needs_map = ref.digest is not None or ref.registry != "docker.io"
        entry = reg.get(ref.standard)
        if entry is not None and entry.image_id == local:
            statements.append(entry.statement(image))
        elif labels.get(LABEL) and (plan := plan_standin(image)) is not None:
            # ours, but recorded under another ENVEVO_HOME or made before the registry (imported debootstrap images)
            found = StandinEntry(tag=ref.standard, source=image, became=labels[LABEL].split(" → ", 1)[-1],
                                 notes=plan.notes, image_id=local, kind=plan.kind, suite=plan.suite)
            statements.append(found.statement(image))
        elif needs_map:
            statements.append(f"{image} → local {_short(ref.standard)}" + (
                f" (digest {ref.digest[:19]}… not verified)" if ref.digest else ""))
        else:
            continue
        if needs_map:
            mapping[image] = ref.standard
    return ImageMap(images=mapping), list(dict.fromkeys(statements))
