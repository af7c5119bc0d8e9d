"""Copying out of envevo's local environment: downloads, and `is_dir` that holds its copy open for the download.

Every copy out is one `cp CTR:PATH -` tar stream the host extracts itself (envevo/runtime/_archive.py). Harbor's
artifact collection asks `is_dir` and then downloads the same path; the copy that answers `is_dir` from the
archive's first header is held (`_held`) and the download goes on from it, so each artifact is copied out once.
A held copy nothing continued ends before the next command (`_release`, one layer down). Before a fresh copy the
deferred preparation runs (`_settle`, envevo/runtime/_local_prep.py).

Once the agent's container is quiesced, the first download under /logs copies the whole of /logs once (agent logs,
artifacts convention dir) and later ones are served from that copy, until a command or an upload may change it.
Harbor's oracle.txt download waits for the agent-log download, which brings the same file.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from harbor.models.trial.paths import EnvironmentPaths

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
            copy = held or self._new_copy(container, source)
            return copy.finish(target, single_file=single_file, budget=self._budget, keep=keep)

        report = await asyncio.to_thread(run)
        for line in report.notes(source):
            self._note(line)
        if (failed := _archive.failure_note(report, source)) is not None:
            self._note(failed)  # Harbor records the artifact as "failed" and scores on: the outcome must not count
        _archive.raise_for(report, self.engine, source, single_file=single_file)

    def _new_copy(self, container: str, source: str) -> _archive.Copy:
        """A copy out of `source` being read (a backend without `cp` makes the archive another way)."""
        return _archive.Copy(self.engine, container, source, self._budget.limits.timeout_sec)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        target = Path(target_path)
        if self._waits_for_agent_logs(source_path, target):
            self._late.append((source_path, target))
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        if not await self._from_logs_copy(source_path, target, single_file=True):
            await self._copy_out(source_path, target, single_file=True)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        source = source_dir.rstrip("/") or "/"
        if not await self._from_logs_copy(source, Path(target_dir), single_file=False):
            await self._copy_out(source, Path(target_dir), single_file=False)
        if _norm(source) == _norm(str(self._agent_logs)):
            self._late = [(s, t) for s, t in self._late if not t.is_relative_to(self.trial_paths.agent_dir)]

    # -- /logs copied once --------------------------------------------------------------------

    @property
    def _agent_logs(self) -> PurePosixPath:
        return PurePosixPath(EnvironmentPaths.for_os(self.os).agent_dir)

    def _waits_for_agent_logs(self, source: str, target: Path) -> bool:
        """Harbor's oracle agent downloads oracle.txt right after solve.sh and never reads it back; the agent-log
        download at the phase's end brings the same file to the same place, so this one waits for it."""
        return (not self._stopped and PurePosixPath(source) == self._agent_logs / _ORACLE_LOG
                and target == self.trial_paths.agent_dir / _ORACLE_LOG)

    async def _fetch_late(self) -> None:
        """The waiting downloads no agent-log download brought (a trial that ended first): fetched now."""
        late, self._late = self._late, []
        for source, target in late:
            if self._container is not None:
                with contextlib.suppress(RuntimeError):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    await self._copy_out(source, target, single_file=True)

    async def _from_logs_copy(self, source: str, target: Path, *, single_file: bool) -> bool:
        """Serve a download under /logs from one copy of the whole /logs, made once the container is quiesced.

        The agent's logs and the artifacts convention dir are then one engine call, not two. Valid while the
        container stays stopped and nothing is uploaded (`_drop_logs_copy`); False when it does not apply."""
        logs, path = self._agent_logs.parent, PurePosixPath(source)
        if not self._stopped or logs not in path.parents or _norm(source) in self._held:
            return False
        if self._logs_copy is None:
            stash = Path(tempfile.mkdtemp(prefix=".envevo-logs-", dir=self.trial_paths.trial_dir))
            try:
                await self._copy_out(str(logs), stash, single_file=False)
            except RuntimeError:
                shutil.rmtree(stash, ignore_errors=True)
                return False  # no /logs to copy: the path's own copy says why
            self._logs_copy = stash
        copied = self._logs_copy.joinpath(*path.relative_to(logs).parts)
        if not await asyncio.to_thread(_archive.place, copied, target, single_file=single_file):
            raise RuntimeError(f"{source} was not copied: not a regular file, or absent from the copy of {logs}")
        return True

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
        held open, and the download of `path` that follows (Harbor's artifact collection) goes on from it. Under a
        /logs already copied, from that copy."""
        logs = self._agent_logs.parent
        if self._logs_copy is not None and self._stopped and logs in PurePosixPath(path).parents:
            return self._logs_copy.joinpath(*PurePosixPath(path).relative_to(logs).parts).is_dir()
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
            self._held[_norm(path)] = self._new_copy(container, path)
            if self._stopping:
                self._release()

        await asyncio.to_thread(start)


_ORACLE_LOG = "oracle.txt"  # harbor.agents.oracle.OracleAgent._ORACLE_LOG_FILE


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.rsplit("/", 1)[-1], p) for p in patterns)
