"""Which files the reference solution left that the tests read: the artifacts a separate verifier must receive.

The listing comes from inside the sandbox (`LISTING_COMMAND`) and is hostile text: a name may hold any byte, a
"file" may be a symlink or a FIFO. Nothing here touches the host's file system; a name that is not a plain
absolute path of printable characters is dropped and said, never declared.
"""

from __future__ import annotations

import posixpath
import re

from pydantic import BaseModel

MAX_ENTRIES = 20_000  # a solution that changes more files than this is listed in part, and said
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024  # one declared file at most; a bigger one is not copied to the verifier
GROUP_AS_DIR = 8  # more changed files than this under one named dir: the dir is declared, not each file
MARK = "/tmp/.envevo-harden-mark"
_PRUNE = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/logs", "/solution", "/tests", "/installed-agent",
          "/oracle", "/agent-logs", "/var/cache", "/var/log", "/var/lib/apt", "/var/lib/dpkg", "/root/.cache")
# The agent phase's changed files, NUL-separated "type<TAB>size<TAB>path", by change time (ctime: a solution can set a
# file's mtime back, not its ctime), bounded in entries and bytes.
LISTING_COMMAND = (
    "find / -xdev \\( " + " -o ".join(f"-path {p}" for p in _PRUNE) + " \\) -prune -o "
    f"-cnewer {MARK} ! -type d -printf '%y\\t%s\\t%p\\0' 2>/dev/null | head -z -n {MAX_ENTRIES + 1} | head -c 8000000"
)
_NOISE_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules", ".git", ".npm", ".cache"}
_NOISE_FILES = {"/etc/ld.so.cache", "/root/.bash_history", "/root/.wget-hsts", "/root/.python_history",
                "/root/.lesshst", "/root/.viminfo", "/etc/mtab"}
_NOISE_SUFFIXES = (".pyc", ".pyo", ".swp", ".log")
_SAFE_PATH = re.compile(r"^/[^\x00-\x1f\x7f\\]*$")


class Changed(BaseModel):
    path: str
    type: str  # find's %y: f file, l symlink, p FIFO, s socket, …
    size: int


class Artifact(BaseModel):
    path: str
    why: str


class Choice(BaseModel):
    """The artifacts chosen from a listing, and what was left out, each with the reason."""

    artifacts: list[Artifact]
    dropped: list[str]  # "path: why", for the report
    truncated: bool = False


def parse_listing(raw: str) -> tuple[list[Changed], list[str], bool]:
    """(changed entries, dropped "path: why" lines, whether the listing was cut at MAX_ENTRIES)."""
    entries, dropped = [], []
    records = raw.split("\0")
    cut = records.pop() != ""  # the text after the last NUL: a record cut by the byte bound, never trusted
    records = [r for r in records if r]
    truncated = cut or len(records) > MAX_ENTRIES
    for rec in records[:MAX_ENTRIES]:
        kind, _, rest = rec.partition("\t")
        size, _, path = rest.partition("\t")
        shown = path.encode("unicode_escape").decode("ascii")[:160]
        if not size.isdigit() or len(kind) != 1:
            continue  # a cut record at the end of a truncated listing
        if not _SAFE_PATH.match(path) or "\ufffd" in path or len(path) > 1024 or ".." in path.split("/") \
                or posixpath.normpath(path) != path:
            dropped.append(f"{shown}: an unusual name (control characters, '..', or not normalized); not declared")
            continue
        entries.append(Changed(path=path, type=kind, size=int(size)))
    return entries, dropped, truncated


def is_noise(path: str) -> bool:
    """Caches, temp files, logs and bytecode: never an output the tests read."""
    parts = path.split("/")
    return (path in _NOISE_FILES or path.endswith(_NOISE_SUFFIXES) or any(p in _NOISE_PARTS for p in parts)
            or path.startswith(tuple(p + "/" for p in _PRUNE)))


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def choose_artifacts(changed: list[Changed], named: dict[str, str], names: dict[str, str]) -> Choice:
    """The smallest set of paths that carries what the tests read of the solution's output.

    A changed regular file is kept when the tests name it, name a directory above it, or name its file name; files
    under one named directory are declared as that directory when there are more than GROUP_AS_DIR of them. When
    the tests name none of the changed files, every changed file is declared (the proof then decides)."""
    dropped: list[str] = []
    files: list[Changed] = []
    for c in changed:
        if is_noise(c.path):
            continue
        if c.type != "f":
            what = {"l": "a symlink (it could point anywhere in the verifier's container)", "p": "a FIFO",
                    "s": "a socket"}.get(c.type, f"not a regular file (type {c.type})")
            dropped.append(f"{c.path}: {what}; not declared")
        elif c.size > MAX_ARTIFACT_BYTES:
            dropped.append(f"{c.path}: {c.size} bytes, over the {MAX_ARTIFACT_BYTES >> 20} MiB bound; not declared")
        else:
            files.append(c)
    chosen: dict[str, str] = {}
    by_dir: dict[str, list[str]] = {}
    unnamed: list[str] = []
    for f in files:
        if f.path in named:
            chosen[f.path] = f"named in {named[f.path]}"
            continue
        parents = [p for p in named if _under(f.path, p)]
        if parents:
            by_dir.setdefault(max(parents, key=len), []).append(f.path)
        elif posixpath.basename(f.path) in names:
            chosen[f.path] = f"its name {posixpath.basename(f.path)} appears in {names[posixpath.basename(f.path)]}"
        else:
            unnamed.append(f.path)
    for parent, under in by_dir.items():
        if len(under) > GROUP_AS_DIR:
            chosen[parent] = f"holds {len(under)} changed files; the directory is named in {named[parent]}"
        else:
            for p in under:
                chosen[p] = f"under {parent}, named in {named[parent]}"
    if not chosen and unnamed:
        for p in unnamed:
            chosen[p] = "changed by the solution (the tests name none of the changed paths)"
        unnamed = []
    dropped += [f"{p}: changed by the solution, but the tests never name it" for p in unnamed]
    # A chosen file under a chosen directory is carried by the directory.
    paths = sorted(chosen)
    kept = [p for p in paths if not any(q != p and _under(p, q) for q in paths)]
    return Choice(artifacts=[Artifact(path=p, why=chosen[p]) for p in kept], dropped=dropped)
