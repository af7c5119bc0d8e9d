"""envevo's state folder on this host, on the lowest floor: the runtime (its CA trust folder) and the sandbox layer
(containers.conf, stand-ins, the image budget) both keep state there."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """envevo's state folder: $ENVEVO_HOME, else ~/.envevo."""
    return Path(os.environ.get("ENVEVO_HOME") or Path.home() / ".envevo")
