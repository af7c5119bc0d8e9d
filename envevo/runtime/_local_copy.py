"""Copying out of envevo's local environment: downloads, and `is_dir` that holds its copy open for the download.

Every copy out is one `cp CTR:PATH -` tar stream the host extracts itself (envevo/runtime/_archive.py). Harbor's
artifact collection asks `is_dir` and then downloads the same path; the copy that answers `is_dir` from the
archive's first header is held (`_held`) and the download goes on from it, so each artifact is copied out once.
A held copy nothing continued ends before the next command (`_release`, one layer down). Before a fresh copy the
deferred preparation runs (`_settle`, envevo/runtime/_local_prep.py).
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Callable, Sequence
from pathlib import Path

from envevo.runtime import _archive
from envevo.runtime._local_exec import _norm
from envevo.runtime._local_prep import PreparingEnvironment


class CopyingEnvironment(PreparingEnvironment):
    """PreparingEnvironment plus the copies out, each artifact's one stream kept from `is_dir` to its download."""

    async def _copy_out(self, source: str, target: Path, *, single_file: bool,
                        keep: Callable[[str], bool] | None = None) -> None:
        held = self._held.pop(_norm(source), None)
        if held is None:
            await self._settle()
        container = self._require()

        def run() -> _archive.CopyReport:
            copy = held or _archive.Copy(self.engine, container, source, self._budget.limits.timeout_sec)
            return copy.finish(target, single_file=single_file, budget=self._budget, keep=keep)

        report = await asyncio.to_thread(run)
        for line in report.notes(source):
            self._note(line)
        if report.error is not None:
            raise RuntimeError(f"{self.engine} cp {source} failed: {report.error}")
        if single_file and report.files == 0:  # a link, FIFO or giant where a file was asked for
            raise RuntimeError(f"{source} was not copied: {report.stopped or '; '.join(report.dropped) or 'empty archive'}")

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await self._copy_out(source_path, Path(target_path), single_file=True)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False)

    async def download_dir_with_exclusions(self, *, source_dir: str, target_dir: Path | str,
                                           exclude: list[str]) -> None:
        # Harbor's own version packs with the container's tar; this one reads the archive the engine makes.
        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False,
                             keep=lambda rel: not _matches(rel, exclude))

    async def download_dir_filtered(self, *, source_dir: str, target_dir: Path | str,
                                    include: Sequence[str] | None = None, exclude: Sequence[str] | None = None,
                                    protect: Sequence[str] | None = None) -> None:
        def keep(rel: str) -> bool:
            if rel in (protect or ()):
                return True
            return (not include or _matches(rel, include)) and not _matches(rel, exclude or ())

        await self._copy_out(source_dir.rstrip("/") or "/", Path(target_dir), single_file=False, keep=keep)

    async def is_dir(self, path: str, user: str | int | None = None) -> bool:
        """From the archive's first header: no command runs in the container, which may be stopped. The copy is
        held open, and the download of `path` that follows (Harbor's artifact collection) goes on from it."""
        if _norm(path) not in self._held:
            await self._settle()
            await self._open_copy(path)
        return bool(self._held[_norm(path)].is_dir)

    async def _open_copy(self, path: str) -> None:
        container = self._require()

        def start() -> None:
            old = self._held.pop(_norm(path), None)
            if old is not None:
                old.close()
            # Held as soon as it exists, so a cancelled wait still leaves it to `_release`; and if stop() ran while
            # this thread read the first header (a Ctrl-C), nothing will release it later: release it now.
            self._held[_norm(path)] = _archive.Copy(self.engine, container, path, self._budget.limits.timeout_sec)
            if self._stopping:
                self._release()

        await asyncio.to_thread(start)


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.rsplit("/", 1)[-1], p) for p in patterns)
