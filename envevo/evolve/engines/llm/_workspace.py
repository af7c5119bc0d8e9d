"""The Modifier's file access: list, read, write, edit and delete, confined to one candidate task directory.

Every path goes through `resolve`: relative only, no `..`, no symlink anywhere on the way, and the real path
must stay under the root. Writes are size-capped. A refused operation returns an error message to the model
(and is remembered in `refused`), so a model that tries to escape gets told why and carries on.
"""

from __future__ import annotations

import os
import shutil
import stat
import tomllib
from pathlib import Path

from envevo.errors import TaskError
from envevo.task import safe_relpath

MAX_WRITE_BYTES = 2 * 1024 * 1024
MAX_READ_CHARS = 10_000


class Refused(Exception):
    """An operation the workspace does not allow; the message is shown to the model."""


class Workspace:
    def __init__(self, root: Path, max_write_bytes: int = MAX_WRITE_BYTES, max_read_chars: int = MAX_READ_CHARS):
        self.root = Path(os.path.realpath(root))
        self.max_write_bytes = max_write_bytes
        self.max_read_chars = max_read_chars
        self.refused: list[str] = []
        self.written: list[str] = []

    def resolve(self, path: str) -> tuple[str, Path]:
        try:
            rel = safe_relpath(path)
        except TaskError as e:
            raise Refused(str(e)) from None
        cur = self.root
        for part in rel.split("/"):
            cur = cur / part
            if cur.is_symlink():
                raise Refused(f"{rel}: {cur.relative_to(self.root)} is a symlink; the task directory's symlinks are not followed")
        if not Path(os.path.realpath(cur)).is_relative_to(self.root):
            raise Refused(f"{rel} resolves outside the task directory")
        return rel, cur

    def _refuse(self, op: str, e: Exception) -> str:
        self.refused.append(f"{op}: {e}")
        return f"error: {e}"

    def list(self, directory: str = "") -> str:
        try:
            base = self.root if directory.strip() in ("", ".", "./") else self.resolve(directory)[1]
        except Refused as e:
            return self._refuse("list", e)
        if not base.is_dir():
            return f"error: {directory} is not a directory of the task"
        rows = []
        for dirpath, dirnames, filenames in os.walk(base):  # os.walk does not follow symlinked dirs
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                st = p.lstat()
                kind = "symlink" if stat.S_ISLNK(st.st_mode) else f"{st.st_size} bytes"
                mode = ", executable" if st.st_mode & 0o111 and not stat.S_ISLNK(st.st_mode) else ""
                rows.append(f"{p.relative_to(self.root).as_posix()} ({kind}{mode})")
        return "\n".join(rows) or "(empty)"

    def _text(self, path: str, verb: str, missing: str, binary: str) -> tuple[str, str] | str:
        """(path in the task, text) of a text file, or the error to answer: `missing` and `binary` are templates
        naming {rel} (and {n}, the file's size)."""
        try:
            rel, p = self.resolve(path)
        except Refused as e:
            return self._refuse(verb, e)
        if not p.is_file():
            return missing.format(rel=rel)
        data = p.read_bytes()
        if b"\x00" in data:
            return binary.format(rel=rel, n=len(data))
        return rel, data.decode("utf-8", "replace")

    def read(self, path: str, offset: int = 0) -> str:
        found = self._text(path, "read", "error: no file {rel} in the task",
                           "error: {rel} is binary ({n} bytes); inspect it with run_in_container")
        if isinstance(found, str):
            return found
        _, text = found
        chunk = text[max(offset, 0):max(offset, 0) + self.max_read_chars]
        rest = len(text) - max(offset, 0) - len(chunk)
        more = f"\n[… {rest} more characters: read again with offset={offset + len(chunk)}]" if rest > 0 else ""
        return chunk + more

    def write(self, path: str, content: str, executable: bool | None = None) -> str:
        try:
            rel, p = self.resolve(path)
            size = len(content.encode("utf-8"))
            if size > self.max_write_bytes:
                raise Refused(f"{rel}: {size} bytes is over the {self.max_write_bytes}-byte write limit; "
                              "generate large fixtures in the Dockerfile instead")
            if rel == "task.toml":
                try:
                    tomllib.loads(content)
                except tomllib.TOMLDecodeError as e:
                    raise Refused(f"task.toml would not be valid TOML: {e}") from None
            if p.is_dir():
                raise Refused(f"{rel} is a directory")
            for parent in reversed(p.relative_to(self.root).parents):
                q = self.root / parent
                if q.exists() and not q.is_dir():
                    raise Refused(f"{rel}: {parent.as_posix()} is a file, not a directory")
        except Refused as e:
            return self._refuse("write", e)
        p.parent.mkdir(parents=True, exist_ok=True)
        was_exec = p.exists() and bool(p.stat().st_mode & 0o111)
        p.write_text(content, encoding="utf-8")
        exe = executable if executable is not None else (was_exec or rel.endswith(".sh"))
        os.chmod(p, 0o755 if exe else 0o644)
        self.written.append(rel)
        return f"wrote {rel} ({size} bytes{', executable' if exe else ''})"

    def replace(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of `old` in a text file with `new` (an edit without resending the file)."""
        found = self._text(path, "edit", "error: no file {rel} in the task; create it with write_file",
                           "error: {rel} is binary; replace it with write_file")
        if isinstance(found, str):
            return found
        rel, text = found
        if not old:
            return "error: old_text is empty; give the exact text to replace, with enough lines to be unique"
        count = text.count(old)
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            hint = ("copy it exactly (whitespace included) from read_file" if count == 0
                    else "include more surrounding lines so it is unique")
            return f"error: old_text {where} in {rel}; {hint}. Nothing was changed"
        result = self.write(rel, text.replace(old, new, 1))
        if result.startswith("error:"):
            return result
        line = text[:text.index(old)].count("\n") + 1
        return f"edited {rel} at line {line} ({len(old)} characters replaced by {len(new)})"

    def delete(self, path: str) -> str:
        try:
            rel, p = self.resolve(path)
            if rel == "task.toml":
                raise Refused("task.toml cannot be deleted; every Harbor task has one")
        except Refused as e:
            return self._refuse("delete", e)
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        else:
            return f"error: no file or directory {rel} in the task"
        return f"deleted {rel}"
