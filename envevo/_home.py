"""envevo's state folder on this host, on the lowest floor: the runtime (its CA trust folder) and the sandbox layer
(containers.conf, stand-ins, the image budget) both keep state there."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """envevo's state folder: $ENVEVO_HOME, else ~/.envevo."""
    return Path(os.environ.get("ENVEVO_HOME") or Path.home() / ".envevo")


def private_dir(path: Path) -> Path:
    """`path` as a folder only this user can enter (0700) when envevo creates it: run dirs and trial-log roots hold
    task output and any value a user passed to a task. A folder that already exists is the user's: left as it is."""
    if not path.exists():
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    return path
