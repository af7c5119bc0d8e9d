"""The engine calls stand-ins are made with: inspect a local image, build one, read back what a built image
really has, and record a built stand-in in the registry.

Separate from the planning so that every image family's builder (_standins, _standins_toolchains) uses the same calls.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from envevo.errors import UserError
from envevo.sandbox._standins_model import StandinEntry, StandinPlan, _record


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


def _build(engine: str, text: str, tag: str, labels: dict[str, str], what: str,
           files: dict[str, Path] | None = None) -> None:
    from envevo.runtime import host_ca_volume_args as volume_args

    with tempfile.TemporaryDirectory(prefix="envevo-standin-") as tmp:
        (Path(tmp) / "Containerfile").write_text(text)
        for name, src in (files or {}).items():
            shutil.copy2(src, Path(tmp) / name)
        label_args = [a for k, v in labels.items() for a in ("--label", f"{k}={v}")]
        proc = _run([engine, "build", "-t", tag, *label_args, *volume_args(), tmp], timeout=1800)
    if proc.returncode != 0:
        where = "PyPI" if files else "http://deb.debian.org"
        raise UserError(f"building {what} failed: {_last_line(proc)}; check that {where} is reachable")


_PROBE = ("cat /etc/debian_version 2>/dev/null | sed 's/^/debian=/'; "
          "command -v python3 >/dev/null && python3 -c 'import platform; print(\"python=\" + platform.python_version())'; "
          "command -v go >/dev/null && go version | sed 's/^go version go\\([^ ]*\\).*/go=\\1/'; "
          "command -v node >/dev/null && node --version | sed 's/^v/node=/'; "
          "command -v npm >/dev/null && npm --version | sed 's/^/npm=/'; "
          "command -v tmux >/dev/null && tmux -V | sed 's/^tmux /tmux=/'; "
          "command -v asciinema >/dev/null && asciinema --version | sed 's/^asciinema /asciinema=/'; "
          "command -v getent >/dev/null && getent passwd 1000 | cut -d: -f1 | sed 's/^/uid1000=/'; true")


def _probe(engine: str, image: str, kind: str) -> dict[str, str]:
    """What the built image really has, read from it: debian, python, go, node, npm, tmux, asciinema, uv."""
    if kind == "uv":
        proc = _run([engine, "run", "--rm", "--network=none", image, "--version"], timeout=120)
        m = re.match(r"uv (\S+)", proc.stdout.strip())
        if proc.returncode != 0 or not m:
            raise UserError(f"the stand-in {image} does not start: {_last_line(proc)}")
        return {"uv": m[1]}
    proc = _run([engine, "run", "--rm", "--network=none", "--entrypoint", "sh", image, "-c", _PROBE], timeout=120)
    found = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line and line.split("=", 1)[1])
    if proc.returncode != 0 or "debian" not in found:
        raise UserError(f"the stand-in {image} does not start: {_last_line(proc)}")
    return found


def _register(engine: str, plan: StandinPlan, became: str) -> StandinEntry:
    new_id = image_id(engine, plan.tag)
    if new_id is None:
        raise UserError(f"the stand-in {plan.tag} was built but cannot be found; run 'envevo doctor --fix' again")
    entry = StandinEntry(tag=plan.tag, source=plan.source, became=became, notes=plan.notes,
                         image_id=new_id, kind=plan.kind, suite=plan.suite)
    _record(entry)
    return entry
