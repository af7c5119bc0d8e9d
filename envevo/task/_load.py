"""Load a task directory (Harbor or Terminal-Bench 1, detected) and save a Task as current Harbor."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from envevo.errors import TaskError
from envevo.task._config import check_config, check_schema, migrate_config, parse_toml
from envevo.task._files import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
    decode_text,
    read_tree,
    write_tree,
)
from envevo.task._hash import hash_files
from envevo.task._model import CONFIG_FILE, SourceFormat, Task
from envevo.task._tb1 import convert_tb1

# Every Harbor field has a default, so a dir with Harbor's layout but no task.toml is still a
# Harbor task (with default settings); saving it writes the task.toml.
_HARBOR_MARKERS = ("instruction.md", "environment", "tests", "steps")


def expand_task_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Task dirs (Harbor or Terminal-Bench 1) as given; a folder that is not a task itself but holds tasks
    stands for all of them (a dataset folder)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir() and not looks_like_task(p):
            children = sorted(c for c in p.iterdir() if c.is_dir() and looks_like_task(c))
            if children:
                found.extend(children)
                continue
        found.append(p)
    return found


def looks_like_task(path: str | os.PathLike[str]) -> bool:
    """Cheap check: a directory with task.toml or Harbor's layout, or task.yaml (Terminal-Bench 1)."""
    p = Path(path)
    return p.is_dir() and any((p / n).exists() for n in (CONFIG_FILE, "task.yaml", *_HARBOR_MARKERS))


def detect_format(path: str | os.PathLike[str]) -> SourceFormat:
    """'harbor' if the dir has task.toml (or Harbor's layout), 'terminal-bench-1' if it has task.yaml."""
    root = _task_root(path)
    if (root / CONFIG_FILE).exists():
        return "harbor"
    if (root / "task.yaml").exists():
        return "terminal-bench-1"
    if any((root / n).exists() for n in _HARBOR_MARKERS):
        return "harbor"
    raise TaskError(
        f"{root} has neither task.toml (Harbor) nor task.yaml (Terminal-Bench 1); "
        "point at a task directory, not a dataset folder or a file inside a task"
    )


def load_task(
    path: str | os.PathLike[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> Task:
    """Load a Harbor task (any schema version) or a Terminal-Bench 1 task (converted to Harbor).

    Reads the whole directory into memory; never writes to it.
    """
    root = _task_root(path)
    if (root / CONFIG_FILE).is_dir():
        raise TaskError(f"{root / CONFIG_FILE} is a directory, not a file; replace it with the task's TOML settings")
    fmt = detect_format(root)
    files = read_tree(root, max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes)
    if fmt == "terminal-bench-1":
        task = convert_tb1(files, root)
    elif CONFIG_FILE not in files:
        task = Task(files=files, source=root, source_format="harbor")
    else:
        config_file = files.pop(CONFIG_FILE)
        text = decode_text(config_file.data)
        if text is None:
            raise TaskError(f"{root / CONFIG_FILE} is not UTF-8 text; save it as UTF-8")
        raw = parse_toml(text, str(root / CONFIG_FILE))
        check_config(raw, str(root / CONFIG_FILE))
        check_schema(raw, str(root / CONFIG_FILE))
        task = Task(
            files=files,
            config=migrate_config(raw, str(root / CONFIG_FILE)),
            config_text=text,
            source=root,
            source_format="harbor",
        )
    task.check()
    return task


def replace_dir(tmp: Path, dest: Path) -> None:
    """Move the finished directory `tmp` to `dest`, replacing what is there with two renames, so `dest` is
    never half-written; the old tree is removed after."""
    if dest.exists():
        old = dest.with_name(f".{dest.name}.{os.getpid()}.old")
        dest.rename(old)
        tmp.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(dest)


def save(task: Task, dest: str | os.PathLike[str], *, overwrite: bool = False, validate: bool = True) -> Path:
    """Write ``task`` to ``dest`` as a current-schema Harbor task directory; returns ``dest``.

    The directory appears complete or not at all: files are written to a sibling temp dir that
    is renamed into place, so an interrupted save leaves no half-written task behind.
    """
    if validate:
        task.check()
    dest = Path(dest).absolute()
    if dest.exists() and not dest.is_dir():
        raise TaskError(f"cannot save task to {dest}: a file is in the way; choose a directory path")
    if dest.is_dir() and any(dest.iterdir()):
        if not overwrite:
            raise TaskError(f"cannot save task to {dest}: it already exists and is not empty; choose a new path or "
                            "remove it")
        if dest.is_symlink() or not any((dest / n).is_file() for n in (CONFIG_FILE, "task.yaml")):  # a task only
            raise TaskError(f"refusing to replace {dest}: it is not empty and is not a task dir (no {CONFIG_FILE}); "
                            "--force replaces only a task; choose a new or empty path")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        os.chmod(tmp, 0o755)
        write_tree(task.render_files(), tmp)
        replace_dir(tmp, dest)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise TaskError(f"cannot save task to {dest}: the disk is full; free space, then run again (what was "
                            "committed is kept)") from e
        raise TaskError(f"cannot save task to {dest}: {e.strerror or e}; check the path and permissions") from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def content_hash(task: Task | str | os.PathLike[str]) -> str:
    """Content hash of a Task, or of a task directory loaded with :func:`load_task`."""
    if not isinstance(task, Task):
        task = load_task(task)
    return task.content_hash()


def dir_hash(path: str | os.PathLike[str]) -> str:
    """Hash of the raw files of a directory (no validation, no conversion, junk ignored)."""
    root = _task_root(path)
    return hash_files(read_tree(root))


def _task_root(path: str | os.PathLike[str]) -> Path:
    root = Path(path).expanduser()
    if not root.exists():
        raise TaskError(f"task path {root} does not exist; check the spelling")
    if not root.is_dir():
        raise TaskError(f"task path {root} is not a directory; a task is a directory with task.toml (or task.yaml)")
    return root.absolute()
