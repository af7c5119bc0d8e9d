"""The shape every envevo agent shares on Harbor's side: no install step, a fixed version, a name of its own, and
log files written so that nothing a container put in the log dir is written through or waited on."""

from __future__ import annotations

import contextlib
import os
import stat

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment


class EnvevoAgent(BaseAgent):
    """A Harbor agent that needs nothing installed in the sandbox; subclasses give `name()` and `run()`."""

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return

    def _write_log(self, name: str, text: str) -> None:
        """`name` in the trial's agent log dir. Harbor's compose environments bind-mount that dir into the task's
        container, whose root can plant a symlink there (a host write as root) or a FIFO (a write that never
        returns): whatever is at the name is removed first, and the file is created anew, never followed."""
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        path = self.logs_dir / name
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                return  # a directory where a log goes: the log is dropped, nothing of the container's is touched
            os.unlink(path)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            return  # planted again between the two calls: dropped rather than trusted
        with os.fdopen(fd, "w") as f:
            f.write(text)
