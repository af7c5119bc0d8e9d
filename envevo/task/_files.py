"""Files of a task on disk and in memory: reading a tree safely, writing it back, path rules."""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from envevo.errors import TaskError

#: Per-file and whole-task size limits (bytes). Tasks are small; anything larger is almost
#: always a build artifact or data set that belongs in the image, not the task dir.
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 500 * 1024 * 1024

# Editor/OS/VCS debris: never part of a task, never hashed, never saved.
_JUNK_NAMES = frozenset({"__pycache__", ".DS_Store", ".git", ".pytest_cache"})
_JUNK_SUFFIXES = (".pyc", ".pyo")


class TaskFile(BaseModel):
    """One regular file of a task: its bytes and whether it is executable."""

    model_config = ConfigDict(frozen=True, ser_json_bytes="base64", val_json_bytes="base64")

    data: bytes = b""
    executable: bool = False

    def text(self) -> str | None:
        """The file as UTF-8 text, or None if it is binary."""
        return decode_text(self.data)


def decode_text(data: bytes) -> str | None:
    """UTF-8 text without NUL bytes, else None (treated as binary)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_junk(name: str) -> bool:
    return name in _JUNK_NAMES or name.endswith(_JUNK_SUFFIXES)


def is_junk_path(relpath: str) -> bool:
    return any(is_junk(part) for part in relpath.split("/"))


def safe_relpath(path: str | os.PathLike[str]) -> str:
    """Normalise a task-relative path to posix form; reject anything that could leave the task."""
    raw = os.fspath(path)
    text = raw.replace("\\", "/")
    if not text or text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise TaskError(f"path {raw!r} must be relative to the task directory; use e.g. 'tests/test.sh'")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise TaskError(f"path {raw!r} contains '..' and would escape the task directory; use a path inside it")
    if not parts:
        raise TaskError(f"path {raw!r} does not name a file inside the task directory")
    return "/".join(parts)


def read_tree(
    root: Path,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> dict[str, TaskFile]:
    """Read every non-junk file under ``root`` into memory, keyed by posix relative path.

    Symlinks that stay inside ``root`` are followed and stored as the bytes they point to, so a
    copy that dereferences links (``shutil.copytree``) loads and hashes the same. Links that
    point outside ``root``, dangling links, link cycles and special files are errors.
    """
    root_real = Path(os.path.realpath(root))
    files: dict[str, TaskFile] = {}
    total = 0
    for relpath, real in _walk(root, root_real, "", frozenset({root_real})):
        try:
            st = os.stat(real)
        except OSError as e:
            raise TaskError(f"cannot read {root / relpath}: {e.strerror}; check its permissions") from e
        if not stat.S_ISREG(st.st_mode):
            raise TaskError(f"{root / relpath} is not a regular file (device, socket or FIFO); remove it from the task")
        if st.st_size > max_file_bytes:
            raise TaskError(
                f"{root / relpath} is {_mb(st.st_size)}, over the per-file limit of {_mb(max_file_bytes)}; "
                "move large data into the image build (e.g. download or generate it in the Dockerfile)"
            )
        total += st.st_size
        if total > max_total_bytes:
            raise TaskError(
                f"task {root} is over the total size limit of {_mb(max_total_bytes)}; "
                "move large data into the image build"
            )
        try:
            data = Path(real).read_bytes()
        except OSError as e:
            raise TaskError(f"cannot read {root / relpath}: {e.strerror}; check its permissions") from e
        files[relpath] = TaskFile(data=data, executable=bool(st.st_mode & 0o111))
    return files


def _walk(directory: Path, root_real: Path, prefix: str, ancestors: frozenset[Path]) -> Iterator[tuple[str, Path]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as e:
        raise TaskError(f"cannot list {directory}: {e.strerror}; check its permissions") from e
    for entry in entries:
        if is_junk(entry.name):
            continue
        relpath = f"{prefix}{entry.name}"
        path = Path(entry.path)
        if entry.is_symlink():
            real = Path(os.path.realpath(path))
            if not real.is_relative_to(root_real):
                target = os.readlink(path)
                raise TaskError(
                    f"symlink {relpath} points outside the task directory (-> {target}); "
                    "replace it with a copy of the file"
                )
            if not real.exists():
                raise TaskError(f"symlink {relpath} is dangling (-> {os.readlink(path)}); fix or remove it")
            if real.is_dir():
                if real in ancestors:
                    raise TaskError(f"symlink {relpath} forms a directory cycle; remove it")
                yield from _walk(real, root_real, relpath + "/", ancestors | {real})
                continue
            yield relpath, real
        elif entry.is_dir(follow_symlinks=False):
            yield from _walk(path, root_real, relpath + "/", ancestors | {Path(os.path.realpath(path))})
        else:
            yield relpath, path


def write_tree(files: Mapping[str, TaskFile], dest: Path) -> None:
    """Write files under ``dest`` (which must exist), with 0755/0644 modes so the executable bit survives umask."""
    for relpath in sorted(files):
        f = files[relpath]
        target = dest.joinpath(*safe_relpath(relpath).split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.data)
        os.chmod(target, 0o755 if f.executable else 0o644)


def normjoin(base_dir: str, rel: str) -> str | None:
    """Join a relative reference onto a task-relative dir; None if it leaves the task."""
    joined = posixpath.normpath(posixpath.join(base_dir, rel))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return "" if joined == "." else joined


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def lf_scripts(files: dict[str, TaskFile]) -> tuple[dict[str, TaskFile], list[str]]:
    """`files` with every shell script's CRLF line ends made LF, and the paths changed. A `#!/bin/bash\\r` shebang
    asks for `/bin/bash\\r`, which the kernel reports as `required file not found`; text Windows editors save."""
    out = dict(files)
    changed = []
    for path, f in sorted(files.items()):
        if path.endswith(".sh") and b"\r\n" in f.data:
            out[path] = f.model_copy(update={"data": f.data.replace(b"\r\n", b"\n")})
            changed.append(path)
    return out, changed
