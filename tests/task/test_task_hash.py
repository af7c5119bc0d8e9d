"""Content hash: equal content -> equal hash on any copy; any change -> a different hash."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envevo.task import TaskFile, content_hash, dir_hash, load_task, save
from envevo.task._hash import hash_files

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"

_segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..") and not s.endswith((".pyc", ".pyo")) and s not in (".git", ".DS_Store")
)
_path = st.lists(_segment, min_size=1, max_size=3).map("/".join)
_file = st.builds(TaskFile, data=st.binary(max_size=64), executable=st.booleans())


def _no_prefix_clash(files: dict[str, TaskFile]) -> bool:
    paths = set(files)
    return not any(p.startswith(q + "/") for p in paths for q in paths)


file_sets = st.dictionaries(_path, _file, min_size=1, max_size=8).filter(_no_prefix_clash)


def _write(files: dict[str, TaskFile], root: Path, order: list[str]) -> None:
    for rel in order:
        f = files[rel]
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.data)
        os.chmod(target, 0o750 if f.executable else 0o640)  # unusual modes: only the x bit counts


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(files=file_sets, seed=st.randoms())
def test_copies_written_in_any_order_hash_the_same(files: dict[str, TaskFile], seed) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        order = sorted(files)
        _write(files, Path(a), order)
        shuffled = list(order)
        seed.shuffle(shuffled)
        _write(files, Path(b), shuffled)
        assert dir_hash(a) == dir_hash(b) == hash_files(files)
        c = Path(b) / "copy"
        shutil.copytree(a, c)
        assert dir_hash(c) == hash_files(files)


@settings(max_examples=80, deadline=None)
@given(files=file_sets, data=st.data())
def test_any_byte_change_changes_the_hash(files: dict[str, TaskFile], data) -> None:
    path = data.draw(st.sampled_from(sorted(files)))
    old = files[path]
    if old.data:
        i = data.draw(st.integers(0, len(old.data) - 1))
        flip = data.draw(st.integers(1, 255))
        new_data = old.data[:i] + bytes([old.data[i] ^ flip]) + old.data[i + 1 :]
    else:
        new_data = data.draw(st.binary(min_size=1, max_size=4))
    changed = {**files, path: TaskFile(data=new_data, executable=old.executable)}
    assert hash_files(changed) != hash_files(files)


@settings(max_examples=60, deadline=None)
@given(files=file_sets, data=st.data())
def test_mode_rename_add_and_remove_change_the_hash(files: dict[str, TaskFile], data) -> None:
    path = data.draw(st.sampled_from(sorted(files)))
    base = hash_files(files)
    f = files[path]
    assert hash_files({**files, path: TaskFile(data=f.data, executable=not f.executable)}) != base
    renamed = {p if p != path else p + "x": v for p, v in files.items()}
    if _no_prefix_clash(renamed):
        assert hash_files(renamed) != base
    extra = "zz-new-file"
    if extra not in files and _no_prefix_clash({**files, extra: f}):
        assert hash_files({**files, extra: TaskFile()}) != base  # even an empty file counts
    if len(files) > 1:
        assert hash_files({p: v for p, v in files.items() if p != path}) != base


@settings(max_examples=40, deadline=None)
@given(a=file_sets, b=file_sets)
def test_different_file_sets_hash_differently(a: dict[str, TaskFile], b: dict[str, TaskFile]) -> None:
    assert (hash_files(a) == hash_files(b)) == (a == b)


def test_hash_is_a_fixed_sha256_hex_digest() -> None:
    digest = content_hash(FIXTURES / "harbor-basic")
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert content_hash(load_task(FIXTURES / "harbor-basic")) == digest


def test_boundary_between_files_is_unambiguous() -> None:
    # moving bytes from one file to the next must not collide
    a = {"a": TaskFile(data=b"xy"), "b": TaskFile(data=b"z")}
    b = {"a": TaskFile(data=b"x"), "b": TaskFile(data=b"yz")}
    assert hash_files(a) != hash_files(b)


def test_file_contents_cannot_impersonate_the_next_file() -> None:
    # without length-prefixed contents, one file holding the encoding of another would collide
    two = {"a": TaskFile(data=b"P"), "b": TaskFile(data=b"Q")}
    one = {"a": TaskFile(data=b"P" + (1).to_bytes(8, "big") + b"b-Q")}
    assert hash_files(one) != hash_files(two)


def test_hash_ignores_mtimes_and_location(tmp_path: Path) -> None:
    task = load_task(FIXTURES / "tb1-basic")
    one = save(task, tmp_path / "one")
    two = save(task, tmp_path / "deeper" / "two")
    os.utime(two / "instruction.md", (0, 0))
    assert dir_hash(one) == dir_hash(two) == task.content_hash()


def test_tb1_conversion_is_deterministic() -> None:
    assert load_task(FIXTURES / "tb1-compose").content_hash() == load_task(FIXTURES / "tb1-compose").content_hash()
