"""Keep a task's image layers cached across trials on local engines.

Harbor builds an image per trial and removes it at teardown (`compose down --rmi local`), which also drops
its layers: every trial would rebuild the task from scratch. Building the environment once under our own
tag first keeps the layers alive, so the per-trial builds are cache hits. The tag is derived from the
environment's content, so an edited task gets a new one.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

CACHE_REPO = "localhost/envevo-cache"


def environment_digest(env_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in env_dir.rglob("*") if p.is_file()):
        h.update(path.relative_to(env_dir).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:24]


class ImageCache:
    """One warm build per distinct environment; concurrent callers for the same one wait for it."""

    def __init__(self, engine: str):
        self.engine = engine
        self._builds: dict[str, asyncio.Task] = {}

    async def warm(self, task_dir: Path) -> None:
        env_dir = task_dir / "environment"
        if not (env_dir / "Dockerfile").is_file():
            return  # compose- or image-based tasks: Harbor builds or pulls them as they are
        tag = f"{CACHE_REPO}:{environment_digest(env_dir)}"
        if tag not in self._builds:
            self._builds[tag] = asyncio.ensure_future(self._build(env_dir, tag))
        await asyncio.shield(self._builds[tag])

    async def _build(self, env_dir: Path, tag: str) -> None:
        exists = await asyncio.create_subprocess_exec(
            self.engine, "image", "exists", tag, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        if await exists.wait() == 0:
            return
        # A failed build is not an error here: the trial's own build fails the same way and Harbor reports it.
        proc = await asyncio.create_subprocess_exec(
            self.engine, "build", "-q", "-t", tag, str(env_dir),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        await proc.wait()
