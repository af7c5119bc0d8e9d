"""The Terminal-Bench 2 uv convention, offline: uv from PyPI where astral.sh's installer would put it.

Most public TB2-style tasks fetch uv from its vendor, in the Dockerfile or in tests/test.sh::

    curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh
    source $HOME/.local/bin/env

Where astral.sh cannot be reached (this machine: only the package registries are), the build fails or the test runner
is missing. The same uv binary, at every version, is PyPI's `uv` package. In the runnable copy (never the user's
files) each such fetch becomes `sh /opt/envevo-uv/<version>/install.sh`, a script that does what the vendor's
installer does: `uv` and `uvx` into `$UV_INSTALL_DIR`, else `$XDG_BIN_HOME`, else `$HOME/.local/bin`, the `env` file
beside them, and the `. env` line in `~/.profile` and `~/.bashrc` unless `UV_NO_MODIFY_PATH` is set. The binaries come
from PyPI's static (musllinux) wheel of that version, sha256 checked, cached under `$ENVEVO_HOME/uv/<version>/`, and
reach the image through a `COPY` in the build context: before the RUN step that fetched uv, and at the end of the
Dockerfile when a test or solution script fetches it at run time. Each is stated. A host that reaches astral.sh keeps
the task as written.
"""

from __future__ import annotations

import functools
import gzip
import re
import socket
import tempfile
import threading
from pathlib import Path

from envevo.sandbox._paths import home
from envevo.sandbox._standins_toolchains import _fetch_uv, _uv_releases, uv_release
from envevo.task import Task, TaskFile, without_heredoc_bodies

VENDOR_HOST = "astral.sh"
IN_IMAGE = "/opt/envevo-uv"
CONTEXT_DIR = "envevo-uv"  # in environment/, the Dockerfile's build context
# `curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh`, `wget -qO- https://astral.sh/uv/install.sh | env
# UV_INSTALL_DIR=/usr/local/bin sh`, `… | sh -s -- --quiet`.
INSTALLER = re.compile(
    r"(?:curl|wget)\b[^|;&\n\"]*?https?://astral\.sh/uv/(?:(?P<ver>\d+(?:\.\d+){0,2})/)?install\.sh[^|;&\n\"]*"
    r"\|\s*(?P<env>(?:env\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)(?:/usr/bin/|/bin/)?(?:ba|da)?sh\b"
    r"(?:[ \t]+-s\b)?(?:[ \t]+--(?:[ \t]+[^\s;&|\"]+)*)?")
_SCRIPTS = ("tests/", "solution/")

INSTALL_SH = """#!/bin/sh
# envevo: uv {version} from PyPI's {wheel} (sha256 checked), installed where https://astral.sh/uv/{version}/install.sh
# installs it; this host cannot reach astral.sh.
set -eu
dir="${{UV_INSTALL_DIR:-${{XDG_BIN_HOME:-$HOME/.local/bin}}}}"
mkdir -p "$dir"
gzip -dc {src}/uv.gz > "$dir/uv"
gzip -dc {src}/uvx.gz > "$dir/uvx"
chmod 755 "$dir/uv" "$dir/uvx"
cat > "$dir/env" <<EOF
#!/bin/sh
# add binaries to PATH if they aren't added yet
case ":\\${{PATH}}:" in
    *:"$dir":*)
        ;;
    *)
        export PATH="$dir:\\$PATH"
        ;;
esac
EOF
if [ -z "${{UV_NO_MODIFY_PATH:-}}${{INSTALLER_NO_MODIFY_PATH:-}}" ]; then
    for rc in "$HOME/.profile" "$HOME/.bashrc"; do
        grep -qs "$dir/env" "$rc" || echo ". \\"$dir/env\\"" >> "$rc"
    done
fi
echo "installing to $dir"
echo "  uv"
echo "  uvx"
echo "everything's installed!"
"""


@functools.cache
def vendor_reachable(host: str = VENDOR_HOST, timeout: float = 5.0) -> bool:
    """Whether this host resolves and connects to `host` on 443 within `timeout` (asked once per process)."""
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout + 1)
    return bool(result and result[0])


def uv_fetches(task: Task) -> dict[str, list[str]]:
    """Per file that fetches uv from astral.sh (environment/Dockerfile, tests/ and solution/ scripts), the versions
    it asks for ('' for the installer without a version: the newest)."""
    found: dict[str, list[str]] = {}
    for path, f in task.files.items():
        if path == "environment/Dockerfile" or (path.startswith(_SCRIPTS) and path.endswith(".sh")):
            text = f.data.decode("utf-8", errors="replace")
            versions = [m["ver"] or "" for m in INSTALLER.finditer(text)]
            if versions:
                found[path] = list(dict.fromkeys(versions))
    return found


def uv_binaries(version: str) -> tuple[str, dict[str, bytes]]:
    """(wheel filename, {"uv.gz": …, "uvx.gz": …}) of PyPI's uv `version`, gzipped (uv is 51 MB, over a task file's
    cap; gzip is in every Debian image), from the cache or downloaded once."""
    cache = home() / "uv" / version
    name_file = cache / "wheel"
    if not name_file.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="envevo-uv-", dir=cache) as tmp:
            wheel, files = _fetch_uv(version, _uv_releases(), Path(tmp))
            for name, path in files.items():
                (cache / f"{name}.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        name_file.write_text(wheel)
    return name_file.read_text().strip(), {n: (cache / n).read_bytes() for n in ("uv.gz", "uvx.gz")}


def offline_uv(task: Task, reachable: bool | None = None) -> tuple[Task, list[str]]:
    """`task` with every astral.sh uv fetch served from PyPI's uv (see the module doc), and one stated line per uv
    version; the task unchanged where nothing fetches uv, or where this host reaches astral.sh."""
    fetches = uv_fetches(task)
    if not fetches or "environment/Dockerfile" not in task.files and not fetches.keys() - {"environment/Dockerfile"}:
        return task, []
    if "environment/Dockerfile" not in task.files:
        return task, []  # a prebuilt image: nothing to copy the binaries in with
    if reachable if reachable is not None else vendor_reachable():
        return task, []
    asked = {v for vs in fetches.values() for v in vs}
    exact = {v: (v if v.count(".") == 2 else uv_release(v)) for v in asked}
    task = task.model_copy(deep=True)
    stated = []
    for v in sorted(set(exact.values())):
        wheel, binaries = uv_binaries(v)
        base = f"environment/{CONTEXT_DIR}/{v}"
        for name, data in binaries.items():
            task.files[f"{base}/{name}"] = TaskFile(data=data)
        task.files[f"{base}/install.sh"] = TaskFile(
            data=INSTALL_SH.format(version=v, wheel=wheel, src=f"{IN_IMAGE}/{v}").encode(), executable=True)
        where = ", ".join(p for p, vs in sorted(fetches.items()) if any(exact[x] == v for x in vs))
        stated.append(f"uv {v} from PyPI's {wheel} (sha256 checked), installed where https://astral.sh/uv/{v}/install.sh "
                      f"puts it ($HOME/.local/bin: uv, uvx, env), for {where} (this host cannot reach astral.sh)")
    for path in fetches:
        text = task.files[path].data.decode("utf-8", errors="replace")
        new = INSTALLER.sub(lambda m: f"{m['env']}sh {IN_IMAGE}/{exact[m['ver'] or '']}/install.sh", text)
        if path == "environment/Dockerfile":
            new = _copy_before_fetches(new)
        task.files[path] = task.files[path].model_copy(update={"data": new.encode()})
    run_time = sorted({exact[v] for p, vs in fetches.items() if p != "environment/Dockerfile" for v in vs})
    if run_time:
        df = task.files["environment/Dockerfile"]
        text = df.data.decode("utf-8", errors="replace").rstrip("\n") + "\n"
        text += "".join(f"COPY {CONTEXT_DIR}/{v}/ {IN_IMAGE}/{v}/\n" for v in run_time)
        task.files["environment/Dockerfile"] = df.model_copy(update={"data": text.encode()})
    return task, stated


_RUN = re.compile(r"^\s*RUN\b", re.I)
_USES = re.compile(re.escape(IN_IMAGE) + r"/(?P<ver>[\d.]+)/install\.sh")


def _copy_before_fetches(text: str) -> str:
    """A `COPY envevo-uv/<v>/ /opt/envevo-uv/<v>/` before each RUN instruction that runs the installer."""
    lines = text.split("\n")
    blanked = without_heredoc_bodies(text).split("\n")
    starts: list[int] = []  # the first line of the instruction each line belongs to
    for i, line in enumerate(lines):
        continued = i > 0 and (lines[i - 1].rstrip().endswith("\\") or (blanked[i] == "" and line != ""))
        starts.append(starts[-1] if continued and starts else i)
    need: dict[int, set[str]] = {}
    for i, line in enumerate(lines):
        for m in _USES.finditer(line):
            if _RUN.match(lines[starts[i]]):
                need.setdefault(starts[i], set()).add(m["ver"])
    out = []
    for i, line in enumerate(lines):
        out += [f"COPY {CONTEXT_DIR}/{v}/ {IN_IMAGE}/{v}/" for v in sorted(need.get(i, ()))]
        out.append(line)
    return "\n".join(out)


# `uv python install 3.13` (or `cpython-3.13`, `3.13.5`): a download from GitHub (python-build-standalone).
PYTHON_INSTALL = re.compile(r"\buv\s+python\s+install\s+(?:--?[\w-]+\s+)*(?:cpython-)?(?P<ver>3\.\d+)(?:\.\d+)?(?=[\s;&|\"]|$)")
_GIVEN = re.compile(r"→ .*?\bPython (?P<ver>3\.\d+)")


def own_python(task: Task, standins: list[str], reachable: bool | None = None) -> tuple[Task, list[str]]:
    """`uv python install X`, where X is the Python the stand-in base already has, made a no-op that says so (uv then
    finds the system's Python X); stated. Other versions, and a host that reaches GitHub, keep the task as written."""
    given = {m["ver"] for s in standins if (m := _GIVEN.search(s))}
    hits = {p: f for p, f in task.files.items()
            if (p == "environment/Dockerfile" or (p.startswith(_SCRIPTS) and p.endswith(".sh")))
            and any(m["ver"] in given for m in PYTHON_INSTALL.finditer(f.data.decode("utf-8", errors="replace")))}
    if not hits or (reachable if reachable is not None else vendor_reachable("github.com")):
        return task, []
    task = task.model_copy(deep=True)
    for path, f in hits.items():
        text = f.data.decode("utf-8", errors="replace")
        new = PYTHON_INSTALL.sub(lambda m: f": uv python install {m['ver']} served by the stand-in's own Python {m['ver']}"
                                 if m["ver"] in given else m[0], text)
        task.files[path] = f.model_copy(update={"data": new.encode()})
    versions = ", ".join(sorted(given))
    return task, [f"uv python install {versions} in {', '.join(sorted(hits))}: the stand-in's own Python {versions} "
                  "serves (uv finds it on PATH; python-build-standalone is fetched from GitHub, unreachable here)"]
