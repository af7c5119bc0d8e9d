"""Copy files out of a container without trusting them.

Everything a container can touch is hostile, so nothing it made is followed or opened in place on the host: the
engine streams the path as a tar archive (`podman cp CTR:PATH -`, which reads the container's storage and runs
none of its binaries), and the host extracts it itself:

- only regular files and directories are created; a symlink, hard link, FIFO or device in the archive is dropped
  and named in the report, so no later host write can be redirected and no host read can block;
- a name that is absolute, climbs with `..`, or holds a control character (a newline) is dropped;
- files are opened with O_NOFOLLOW | O_EXCL under directories this module created, permission bits are kept
  (without setuid, setgid or sticky), so a file-mode check in a separate verifier sees the agent's modes;
- a file over the per-file cap, or a copy that would pass the per-sandbox total, stops the copy there (the rest of
  the archive is not read: a sparse 8 GiB file costs the host nothing), and every copy has a time bound.

The caps are `CopyLimits`, read from ENVEVO_COPY_MAX_FILE_MB, ENVEVO_COPY_MAX_TOTAL_MB and ENVEVO_COPY_TIMEOUT_SEC.
"""

from __future__ import annotations

import itertools
import os
import stat
import subprocess
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from pydantic import BaseModel, Field

_MB = 1024 * 1024


class CopyLimits(BaseModel):
    """Bounds on what one sandbox may send to the host."""

    max_file_bytes: int = 64 * _MB
    max_total_bytes: int = 512 * _MB
    max_entries: int = 20_000
    timeout_sec: float = 300

    @classmethod
    def from_env(cls) -> CopyLimits:
        env = os.environ
        return cls(
            max_file_bytes=int(float(env.get("ENVEVO_COPY_MAX_FILE_MB", 64)) * _MB),
            max_total_bytes=int(float(env.get("ENVEVO_COPY_MAX_TOTAL_MB", 512)) * _MB),
            timeout_sec=float(env.get("ENVEVO_COPY_TIMEOUT_SEC", 300)),
        )


class CopyBudget(BaseModel):
    """What one sandbox has sent so far, across its copies (the total cap is per sandbox)."""

    limits: CopyLimits = Field(default_factory=CopyLimits.from_env)
    bytes: int = 0
    entries: int = 0


class CopyReport(BaseModel):
    """One copy's outcome: what was written, what was refused and why."""

    files: int = 0
    bytes: int = 0
    dropped: list[str] = []  # entries not created, each with its reason
    stopped: str | None = None  # why the copy ended before the archive did (a cap or the time bound)
    missing: bool = False  # the source path does not exist in the container
    error: str | None = None  # the engine failed for another reason

    def notes(self, source: str) -> list[str]:
        lines = [f"copy of {source}: {d}" for d in self.dropped[:20]]
        if len(self.dropped) > 20:
            lines.append(f"copy of {source}: {len(self.dropped) - 20} more entries dropped")
        if self.stopped:
            lines.append(f"copy of {source} stopped: {self.stopped}")
        return lines


def raise_for(report: CopyReport, engine: str, source: str, *, single_file: bool) -> None:
    """The error of a copy out that brought nothing usable: the engine failed, or a file was asked for and what came
    was a link, a FIFO or a giant."""
    if report.error is not None:
        raise RuntimeError(f"{engine} cp {source} failed: {report.error}")
    if single_file and report.files == 0:
        raise RuntimeError(f"{source} was not copied: {report.stopped or '; '.join(report.dropped) or 'empty archive'}")


# The note a sandbox's copy out leaves when the engine failed on a path that exists (not a missing path, which a
# `nop` legitimately has): the trial's outcome is then the machine's fault, never a reward (envevo/runtime/_trial.py).
COPY_FAILED = "copy failed:"


def failure_note(report: CopyReport, source: str) -> str | None:
    """The COPY_FAILED note for an engine failure on `source`, None for a clean copy or a path that is not there."""
    return f"{COPY_FAILED} {source}: {report.error}" if report.error is not None and not report.missing else None


def copy_failure(notes: list[str]) -> str | None:
    """The first COPY_FAILED note among a trial's sandbox notes (the engine could not copy an artifact out: under
    load, "layer not known" or a storage lock), which makes the trial an infrastructure error whatever it scored."""
    return next((n[:500] for n in notes if n.startswith(COPY_FAILED)), None)


class CopyError(RuntimeError):
    """The engine could not read the path at all (no such container or path)."""


def _clean_name(name: str) -> PurePosixPath | None:
    if not name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        return None
    return path


def _open_dir(root: Path, parts: tuple[str, ...]) -> Path:
    """root/parts as real directories, created where missing; raises if any of them is not a plain directory."""
    current = root
    for part in parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(f"{current} exists and is not a directory")
    return current


def _write_file(path: Path, source: IO[bytes], size: int, mode: int) -> None:
    if os.path.lexists(path):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise FileExistsError(f"{path} exists and is not a regular file")
        os.unlink(path)  # a re-copy replaces the file; never writes through what is there
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        left = size
        while left > 0:
            chunk = source.read(min(left, 1 << 20))
            if not chunk:
                raise EOFError("the archive ended inside a file")
            out.write(chunk)
            left -= len(chunk)
        os.fchmod(out.fileno(), mode & 0o777)


def extract(stream: IO[bytes], target: Path, *, single_file: bool, budget: CopyBudget,
            keep: Callable[[str], bool] | None = None) -> CopyReport:
    """Extract a `podman cp … -` archive of one path into `target`.

    `single_file`: the source was a file, written at `target` itself; otherwise the source was a directory whose
    content goes under `target` (the archive's first name component, the source's own name, is dropped).
    `keep`: a filter on a file's path relative to the source directory (Harbor's include/exclude globs)."""
    if not single_file:
        target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        return _extract_members(archive, iter(archive), target, single_file=single_file, budget=budget, keep=keep)


def _extract_members(archive: tarfile.TarFile, members: Iterator[tarfile.TarInfo], target: Path, *,
                     single_file: bool, budget: CopyBudget, keep: Callable[[str], bool] | None) -> CopyReport:
    report = CopyReport()
    limits = budget.limits
    dir_modes: list[tuple[Path, int]] = []
    for member in members:
        budget.entries += 1
        if budget.entries > limits.max_entries:
            report.stopped = f"more than {limits.max_entries} entries"
            break
        name = _clean_name(member.name)
        if name is None:
            report.dropped.append(f"{member.name!r}: unsafe name")
            continue
        if single_file:
            if not member.isreg():
                report.dropped.append(f"{name}: not a regular file")
                break
            dest_parent, dest = target.parent, target
        else:
            rel = name.parts[1:]
            if not rel:  # the source directory itself
                if member.isdir():
                    dir_modes.append((target, member.mode))
                continue
            dest_parent, dest = target.joinpath(*rel[:-1]), target.joinpath(*rel)
        if member.isdir():
            _open_dir(target, tuple(dest.relative_to(target).parts))
            dir_modes.append((dest, member.mode))
            continue
        if not member.isreg():
            kind = "symlink" if member.issym() else "hard link" if member.islnk() else "FIFO" if member.isfifo() else "device or other"
            report.dropped.append(f"{name}: {kind}, not copied")
            continue
        if member.size > limits.max_file_bytes:
            report.stopped = (f"{name} is {member.size / _MB:.0f} MiB, over the per-file cap of "
                              f"{limits.max_file_bytes / _MB:.0f} MiB (ENVEVO_COPY_MAX_FILE_MB)")
            break
        if budget.bytes + member.size > limits.max_total_bytes:
            report.stopped = (f"{name} would take this sandbox past its cap of "
                              f"{limits.max_total_bytes / _MB:.0f} MiB copied out (ENVEVO_COPY_MAX_TOTAL_MB)")
            break
        if not single_file:
            if keep is not None and not keep(PurePosixPath(*rel).as_posix()):
                continue
            _open_dir(target, tuple(dest_parent.relative_to(target).parts))
        source = archive.extractfile(member)
        if source is None:
            continue
        _write_file(dest, source, member.size, member.mode)
        budget.bytes += member.size
        report.files += 1
        report.bytes += member.size
        if single_file:
            break
    for path, mode in reversed(dir_modes):  # deepest first, after their files are in
        # Exact bits for a mode check; a non-root host keeps owner rwx so it can still list and remove the copy.
        os.chmod(path, (mode & 0o777) | (0 if os.geteuid() == 0 else 0o700), follow_symlinks=False)
    return report


def place(copied: Path, target: Path, *, single_file: bool) -> bool:
    """Put part of an earlier extraction (`copied`, made by `extract`: plain files and dirs only) at `target`, as if
    it had been extracted there: hard links, so no byte is copied twice. False if `copied` is absent, or is not a
    regular file where one was asked for; a directory asked for where a file is places nothing, as `extract` does."""
    try:
        st = os.lstat(copied)
    except FileNotFoundError:
        return False
    if single_file:
        if not stat.S_ISREG(st.st_mode):
            return False
        _link_file(copied, target)
        return True
    if not stat.S_ISDIR(st.st_mode):
        return True
    target.mkdir(parents=True, exist_ok=True)
    dirs = [(target, st.st_mode)]
    for root, subdirs, files in os.walk(copied):
        rel = Path(root).relative_to(copied).parts
        for name in subdirs:
            dirs.append((_open_dir(target, (*rel, name)), os.lstat(Path(root, name)).st_mode))
        for name in files:
            _link_file(Path(root, name), target.joinpath(*rel, name))
    for path, mode in reversed(dirs):
        os.chmod(path, stat.S_IMODE(mode), follow_symlinks=False)
    return True


def _link_file(source: Path, dest: Path) -> None:
    if os.path.lexists(dest):
        if not stat.S_ISREG(os.lstat(dest).st_mode):
            raise FileExistsError(f"{dest} exists and is not a regular file")
        os.unlink(dest)  # replaced, never written through, as `_write_file` does
    try:
        os.link(source, dest, follow_symlinks=False)
    except OSError:  # another filesystem
        with open(source, "rb") as src:
            _write_file(dest, src, os.fstat(src.fileno()).st_size, os.stat(source).st_mode)


class Copy:
    """One `podman cp CTR:PATH -` being read, from its first header on (blocking; run it in a worker thread).

    Opening it reads the archive's first header, which says whether the source is a directory, a file, or absent;
    `finish` goes on extracting from there. So deciding the kind and copying cost one engine call, not two. The
    time bound runs from the start; `close` kills the engine's process (a held copy must not outlive its use)."""

    def __init__(self, engine: str, container: str, source: str, timeout_sec: float, *, argv: list[str] | None = None):
        # `argv`: another command that writes such an archive (the bwrap backend's `tar` inside a sandbox)
        self._proc = subprocess.Popen(argv or [engine, "cp", f"{container}:{source}", "-"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        self._timed_out = threading.Event()
        self._timer = threading.Timer(timeout_sec, self._expire)
        self._timer.daemon = True  # a copy a Ctrl-C abandoned must not keep the interpreter from exiting
        self._timer.start()
        self._timeout_sec = timeout_sec
        self._archive: tarfile.TarFile | None = None
        self._members: Iterator[tarfile.TarInfo] = iter(())
        self._first: tarfile.TarInfo | None = None
        self._error: str | None = None  # no archive (the engine failed: no such path or container)
        self._stopped: str | None = None
        self._closed = False
        assert self._proc.stdout is not None
        try:
            self._archive = tarfile.open(fileobj=self._proc.stdout, mode="r|")
            self._members = iter(self._archive)
            self._first = next(self._members, None)
        except (tarfile.ReadError, EOFError) as exc:
            self._error = str(exc) or type(exc).__name__
        except (OSError, tarfile.TarError) as exc:
            self._stopped = f"{type(exc).__name__}: {exc}"

    def _expire(self) -> None:
        self._timed_out.set()
        self._proc.kill()

    @property
    def is_dir(self) -> bool | None:
        """Whether the source is a directory, from the first header; None if there is no archive (absent)."""
        return None if self._first is None else self._first.isdir()

    def finish(self, target: Path, *, single_file: bool, budget: CopyBudget,
               keep: Callable[[str], bool] | None = None) -> CopyReport:
        """Extract the archive into `target` (see `extract`), then end the engine's process."""
        try:
            report = self._extract(target, single_file=single_file, budget=budget, keep=keep)
        finally:
            err = self.close()
        code = self._proc.returncode
        if self._timed_out.is_set():
            report.stopped = f"not done within {self._timeout_sec:.0f} s (ENVEVO_COPY_TIMEOUT_SEC)"
            report.error = None
        elif report.error is not None or (code not in (0, None, -9) and report.files == 0 and not report.stopped):
            text = err.strip().splitlines()[-1] if err.strip() else (report.error or f"exit status {code}")
            report.missing = "no such file" in text.lower() or "does not exist" in text.lower()
            report.error = text[:300]
        return report

    def _extract(self, target: Path, *, single_file: bool, budget: CopyBudget,
                 keep: Callable[[str], bool] | None) -> CopyReport:
        if self._error is not None or self._stopped is not None or self._archive is None:
            return CopyReport(error=self._error, stopped=self._stopped)
        members = self._members if self._first is None else itertools.chain([self._first], self._members)
        try:
            if not single_file:
                target.mkdir(parents=True, exist_ok=True)
            return _extract_members(self._archive, members, target, single_file=single_file, budget=budget, keep=keep)
        except (tarfile.ReadError, EOFError) as exc:
            return CopyReport(error=str(exc) or type(exc).__name__)
        except (OSError, tarfile.TarError) as exc:
            return CopyReport(stopped=f"{type(exc).__name__}: {exc}")

    def close(self) -> str:
        """End the engine's process (killed if still running); its stderr. Idempotent."""
        if self._closed:
            return ""
        self._closed = True
        self._timer.cancel()
        if self._proc.poll() is None:
            self._proc.kill()
        if self._proc.stdout is not None:
            self._proc.stdout.close()  # a writer still holding it (a helper the engine started) gets EPIPE, not a wait
        err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
        self._proc.wait()
        if self._proc.stderr is not None:
            self._proc.stderr.close()
        return err

