"""The host side of the boundary: what a container sends out is extracted without trusting it.

Each test is an attack an agent can make on the archive `podman cp CTR:PATH -` produces: a link the host would
later write through, a FIFO a host read would block on, a sparse giant, a name with a newline or a `..`."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from envevo.runtime._archive import CopyBudget, CopyLimits, extract


def _archive(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buf.seek(0)
    return buf


def _file(name: str, data: bytes, mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    return info, data


def _entry(name: str, kind: bytes, **fields) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info, None


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "OTHER"
        out[path.relative_to(root).as_posix()] = kind
    return out


def test_links_fifos_and_devices_are_dropped_and_named(tmp_path):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("host file\n")
    stream = _archive(
        _entry("agent", tarfile.DIRTYPE, mode=0o755),
        _file("agent/ok.txt", b"fine\n"),
        _entry("agent/exit-code.txt", tarfile.SYMTYPE, linkname=str(sentinel)),
        _entry("agent/hard", tarfile.LNKTYPE, linkname="agent/ok.txt"),
        _entry("agent/trajectory.json", tarfile.FIFOTYPE),
        _entry("agent/null", tarfile.CHRTYPE, devmajor=1, devminor=3),
    )
    out = tmp_path / "out"
    report = extract(stream, out, single_file=False, budget=CopyBudget())
    assert _tree(out) == {"ok.txt": "file"}
    assert sentinel.read_text() == "host file\n"
    kinds = " ".join(report.dropped)
    for what in ("exit-code.txt: symlink", "hard: hard link", "trajectory.json: FIFO", "null: device"):
        assert what in kinds


def test_a_link_already_at_the_target_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "reward.txt").symlink_to(victim)
    with pytest.raises(FileExistsError):  # never writes through it, and says so
        extract(_archive(_entry("v", tarfile.DIRTYPE, mode=0o755), _file("v/reward.txt", b"1\n")), out,
                single_file=False, budget=CopyBudget())
    assert victim.read_text() == "keep me\n"


@pytest.mark.parametrize("name", ["agent/../../escape.txt", "/etc/escape.txt", "agent/new\nline.txt", "agent/bell\x07"])
def test_unsafe_names_are_dropped(tmp_path, name):
    out = tmp_path / "out"
    report = extract(_archive(_file(name, b"x")), out, single_file=False, budget=CopyBudget())
    assert _tree(tmp_path) == {"out": "dir"}
    assert report.dropped and "unsafe name" in report.dropped[0]


def test_a_file_over_the_cap_stops_the_copy_before_its_data_is_read(tmp_path):
    # A sparse 8 GiB file: the header alone says so; reading stops there, nothing of it reaches the disk.
    big = tarfile.TarInfo("agent/sparse.bin")
    big.size = 8 << 30

    class Endless(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            b[:] = bytes(len(b))
            return len(b)

    header = big.tobuf(format=tarfile.GNU_FORMAT)
    stream = io.BufferedReader(_Chain(_archive(_entry("agent", tarfile.DIRTYPE, mode=0o755)).getvalue()[:512] + header,
                                      Endless()))
    out = tmp_path / "out"
    report = extract(stream, out, single_file=False, budget=CopyBudget(limits=CopyLimits(max_file_bytes=1 << 20)))
    assert report.stopped is not None and "per-file cap" in report.stopped and "ENVEVO_COPY_MAX_FILE_MB" in report.stopped
    assert not (out / "sparse.bin").exists()


class _Chain(io.RawIOBase):
    """Bytes, then an endless source: what a pipe from `podman cp` of a sparse giant looks like."""

    def __init__(self, head: bytes, tail: io.RawIOBase):
        self._head, self._tail = memoryview(head), tail

    def readable(self):
        return True

    def readinto(self, b):
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._tail.readinto(b)


def test_the_total_cap_is_per_sandbox_across_copies(tmp_path):
    budget = CopyBudget(limits=CopyLimits(max_total_bytes=1500))
    first = extract(_archive(_file("a", b"x" * 1000)), tmp_path / "a", single_file=True, budget=budget)
    second = extract(_archive(_file("b", b"y" * 1000)), tmp_path / "b", single_file=True, budget=budget)
    assert first.files == 1 and first.stopped is None
    assert second.files == 0 and "cap of" in (second.stopped or "")
    assert not (tmp_path / "b").exists()


def test_modes_are_kept_without_setuid(tmp_path):
    stream = _archive(
        _entry("art", tarfile.DIRTYPE, mode=0o755),
        _entry("art/locked", tarfile.DIRTYPE, mode=0o750),
        _file("art/locked/key.pem", b"k", mode=0o600),
        _file("art/run.sh", b"#!/bin/sh\n", mode=0o4755),
    )
    out = tmp_path / "out"
    extract(stream, out, single_file=False, budget=CopyBudget())
    assert stat.S_IMODE(os.stat(out / "locked").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(out / "locked" / "key.pem").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(out / "run.sh").st_mode) == 0o755


def test_a_single_file_copy_refuses_anything_but_a_regular_file(tmp_path):
    target = tmp_path / "reward.txt"
    report = extract(_archive(_entry("reward.txt", tarfile.SYMTYPE, linkname="/etc/shadow")), target,
                     single_file=True, budget=CopyBudget())
    assert not os.path.lexists(target)
    assert "not a regular file" in report.dropped[0]


def test_include_and_exclude_filters_apply_to_relative_paths(tmp_path):
    stream = _archive(_entry("logs", tarfile.DIRTYPE, mode=0o755), _file("logs/keep.txt", b"1"),
                      _entry("logs/cache", tarfile.DIRTYPE, mode=0o755), _file("logs/cache/big.bin", b"2"))
    out = tmp_path / "out"
    extract(stream, out, single_file=False, budget=CopyBudget(), keep=lambda rel: not rel.startswith("cache/"))
    assert (out / "keep.txt").read_text() == "1"
    assert not (out / "cache" / "big.bin").exists()
