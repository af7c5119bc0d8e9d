"""Local stand-ins for base images no registry can serve here, built from Debian packages and stated.

A stand-in is tagged under the standard name a task uses (``docker.io/library/python:3.12-slim``), so
task Dockerfiles stay standard, and it never pretends: each one carries a label and a registry entry
saying what it really is ("python:3.12-slim → Debian trixie, Python 3.13.5"), read from the built image.

- ``debian:<suite>[-slim]``: debootstrap minbase, imported (see _base_image).
- ``python:<ver>[-slim][-<suite>]``: that Debian suite plus python3, pip and venv, behaving like the
  official image (``python``/``pip`` on PATH, system-wide ``pip install`` allowed, pip upgradable).
- ``ubuntu:<ver>``: the nearest Debian suite, with the ``ubuntu`` user of recent Ubuntu images.
- ``ghcr.io/laude-institute/t-bench/python-3-13`` and ``…/ubuntu-24-04`` (Terminal-Bench's own bases: the
  official python or ubuntu image plus tmux and asciinema): the python or ubuntu stand-in plus Debian's tmux
  and asciinema, WORKDIR /app.
- ``golang:<ver>`` and ``node:<ver>``: Debian's toolchain (golang-go; nodejs and npm). The version really given
  is stated; a tag asking for a newer major.minor than any Debian suite packages is refused with that reason.
- ``ghcr.io/astral-sh/uv:<ver>`` (the distroless image tasks ``COPY --from=``): ``/uv`` and ``/uvx`` taken from
  the static (musllinux) ``uv`` wheel of the same version on PyPI, downloaded on the host and checked
  against PyPI's sha256.

Here: a reference's plan (debian, python and ubuntu planned here; golang, node, Terminal-Bench and uv in
_standins_toolchains), the build recipes, building, and the use by verify. What a stand-in is and the registry
are in _standins_model, the engine calls in _standins_engine.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from envevo.errors import UserError
from envevo.runtime import DEFAULT_ENGINE
from envevo.sandbox._refs import ImageRef, parse_ref
from envevo.sandbox._standins_engine import _build, _probe, _register, _run, image_id, image_info
from envevo.sandbox._standins_model import (
    LABEL,
    Progress,
    StandinEntry,
    StandinPlan,
    _short,
    choose_python_suite,
    load_registry,
    ubuntu_suite,
)
from envevo.sandbox._standins_toolchains import (
    TBENCH_PREFIX,
    UV_IMAGE,
    _ensure_uv,
    _plan_tbench,
    _plan_tool,
    _plan_uv,
)

if TYPE_CHECKING:
    from envevo.task import ImageMap, Task

SUITE_NUMBER = {"11": "bullseye", "12": "bookworm", "13": "trixie"}
BUILDABLE_SUITES = ("bookworm", "trixie")
_PY_TAG = re.compile(r"^(?:(?P<ver>\d+(?:\.\d+){0,2}))?(?:-?(?P<slim>slim))?(?:-?(?P<suite>[a-z]+))?$")
_DEBIAN_TAG = re.compile(r"^(?P<suite>[a-z]+|\d+)(?:\.\d+)?(?:-\d{8})?(?P<slim>-slim)?$")


# ---- planning (pure) --------------------------------------------------------------------------

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
    return (f"no local stand-in is built for {reference} (only the official debian, python, ubuntu, golang and node "
            "images, Terminal-Bench's python-3-13 and ubuntu-24-04 bases, and ghcr.io/astral-sh/uv:<version>)")


def _plan(ref: ImageRef) -> StandinPlan | None:
    if f"{ref.registry}/{ref.repository}/".startswith(TBENCH_PREFIX):
        return _plan_tbench(ref)
    if f"{ref.registry}/{ref.repository}" == UV_IMAGE:
        return _plan_uv(ref)
    name, tag = ref.official, ref.tag or "latest"
    if name in ("golang", "node"):
        return _plan_tool(ref, name, tag)
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
    """The build recipe of a stand-in layer (Debian ones come from debootstrap directly, uv from ``uv_containerfile``)."""
    apt = ("RUN apt-get update \\\n"
           " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {packages} \\\n"
           " && rm -rf /var/lib/apt/lists/*")
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
    if plan.kind in ("tbench-python", "tbench-ubuntu"):
        # Terminal-Bench's base images: the official python or ubuntu image plus tmux and asciinema.
        parent = plan.parent
        assert parent is not None
        return (f"FROM {parent.build_tag}\n{apt.format(packages='tmux asciinema')} \\\n"
                " && tmux -V && asciinema --version\nWORKDIR /app\nCMD [\"/bin/bash\"]\n")
    if plan.kind == "golang":
        # Like the official image: Go at /usr/local/go (a link to Debian's), GOPATH /go, no toolchain downloads.
        return (f"FROM {plan.base}\n{apt.format(packages='golang-go ca-certificates')} \\\n"
                ' && ln -s "$(dirname "$(dirname "$(readlink -f /usr/bin/go)")")" /usr/local/go \\\n'
                " && mkdir -p /go/bin /go/src && go version\n"
                "ENV GOPATH=/go GOTOOLCHAIN=local \\\n"
                "    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
                "WORKDIR /go\n")
    if plan.kind == "node":
        # Like the official image: node and npm on PATH, a 'node' user with uid 1000.
        return (f"FROM {plan.base}\n{apt.format(packages='nodejs npm ca-certificates')} \\\n"
                " && if ! getent passwd 1000 >/dev/null; then useradd -m -u 1000 -s /bin/bash node; fi \\\n"
                " && node --version && npm --version\nCMD [\"node\"]\n")
    raise ValueError(f"{plan.kind} stand-ins are not built from a Containerfile")


# ---- building ---------------------------------------------------------------------------------

def _became(plan: StandinPlan, have: dict[str, str]) -> str:
    """What the stand-in really is, from what its probe read: "Debian trixie, Go 1.24.4"."""
    if plan.kind == "uv":
        return f"uv {have['uv']} (/uv, /uvx from PyPI's static musllinux wheel)"
    parts = [f"Debian {plan.suite}" + (f" {have['debian']}" if plan.kind in ("ubuntu", "tbench-ubuntu") else "")]
    for key, label in (("python", "Python"), ("go", "Go"), ("node", "Node.js"), ("npm", "npm"), ("tmux", "tmux"),
                       ("asciinema", "asciinema")):
        if key in have and (key != "python" or plan.kind in ("python", "tbench-python")):
            parts.append(f"{label} {have[key]}")
    return ", ".join(parts)


def _ensure_layer(engine: str, plan: StandinPlan, say: Progress) -> None:
    """Build the shared layer ``plan.build_tag`` (and the layer it starts from) unless it exists."""
    if image_id(engine, plan.build_tag) is not None:
        return
    if plan.parent is not None:
        _ensure_layer(engine, plan.parent, say)
    speed = {"python": " (apt over http, about 20-60 s)", "golang": " (apt over http, about 60 s)",
             "node": " (apt over http, about 60 s)"}.get(plan.kind, "")
    say(f"building the {plan.kind} stand-in on Debian {plan.suite}{speed}…")
    _build(engine, containerfile(plan), plan.build_tag, {f"{LABEL}.base": plan.base}, f"the {plan.kind} stand-in on {plan.suite}")


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
    if plan.kind == "uv":
        return _ensure_uv(engine, plan, say)
    base = plan.base
    if image_id(engine, base) is None:
        say(f"building {base} with debootstrap (about 45 s)…")
        build_debian_image(engine, base)
    if plan.kind == "debian":
        if plan.tag != base:
            _run([engine, "tag", base, plan.tag])
        debian = _probe(engine, plan.tag, "debian")["debian"]
        became = f"Debian {plan.suite} {debian}, built locally with debootstrap (minbase)"
        return _register(engine, plan, became)
    _ensure_layer(engine, plan, say)
    have = _probe(engine, plan.build_tag, plan.kind)
    became = _became(plan, have)
    statement = f"{_short(plan.tag)} → {became}"
    env = {"python": {"PYTHON_VERSION": have.get("python")}, "tbench-python": {"PYTHON_VERSION": have.get("python")},
           "golang": {"GOLANG_VERSION": have.get("go")}, "node": {"NODE_VERSION": have.get("node")}}.get(plan.kind, {})
    env_lines = "".join(f"ENV {k}={v}\n" for k, v in env.items() if v)
    _build(engine, f"FROM {plan.build_tag}\n{env_lines}", plan.tag,
           {LABEL: statement, f"{LABEL}.source": plan.source}, f"the stand-in tag {plan.tag}")
    return _register(engine, plan, became)


# ---- use by verify ----------------------------------------------------------------------------

def standins_for(task: Task, engine: str = DEFAULT_ENGINE) -> tuple[ImageMap, list[str]]:
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
