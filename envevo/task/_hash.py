"""Content hash of a task: sha256 over (path, executable bit, bytes) of every file, in path order."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from envevo.task._files import TaskFile, is_junk_path

# Bumped if the encoding below ever changes, so old and new hashes can never collide.
_HASH_DOMAIN = b"envevo-task-v1\x00"


def hash_files(files: Mapping[str, TaskFile]) -> str:
    """Hex sha256 of a task's files. Independent of mtimes, owners, umask and directory order.

    Each field is length-prefixed, so no two different file sets share an encoding.
    """
    digest = hashlib.sha256(_HASH_DOMAIN)
    for path in sorted(p for p in files if not is_junk_path(p)):
        f = files[path]
        name = path.encode("utf-8")
        digest.update(len(name).to_bytes(8, "big"))
        digest.update(name)
        digest.update(b"x" if f.executable else b"-")
        digest.update(len(f.data).to_bytes(8, "big"))
        digest.update(f.data)
    return digest.hexdigest()
