"""Deferred directory preparation for envevo's local environment: Harbor's small root commands ride on the next one.

Harbor prepares the trial's dirs (`mkdir`/`chmod`, the verifier's log dir made anew), makes every script it
uploaded executable (`chmod +x`) and removes stale reward files, each as its own command: an engine call apiece,
a large share of a verification's latency. Here they are queued (`_pending`) and run, as root, in front of the
next root command, or alone (`_settle`) before a copy out, an upload into a dir they prepare, or a command as
another user. Whether a command runs as root may need the image's default user: `image inspect`, asked once per
image and process. The verifier's /logs/verifier is made here, owned by its user, mode 755 (docs/sandbox.md).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from harbor.environments.base import ExecResult
from harbor.models.trial.paths import EnvironmentPaths

from envevo.runtime._engine_cli import _run
from envevo.runtime._local_exec import CommandEnvironment, _overlaps


class PreparingEnvironment(CommandEnvironment):
    """CommandEnvironment plus the deferred preparation and Harbor's chores that ride on the next command."""

    def _chore(self, command: str) -> list[str] | None:
        """The paths of a Harbor chore that can ride on the next command, or None."""
        match = _CHORE.fullmatch(command)
        if match is None:
            return None
        paths = shlex.split(match[2])
        verifier = PurePosixPath(EnvironmentPaths.for_os(self.os).verifier_dir)
        if match[1] == "chmod +x" and all(any(_overlaps(p, u) for u in self._uploaded) for p in paths):
            return paths
        if match[1] == "rm -f --" and all(PurePosixPath(p).parent == verifier for p in paths):
            return paths
        return None

    async def _as_root(self, who: str | int | None) -> bool:
        if who is None:  # the image's own user
            who = await _image_user(self.engine, self._image_ref)
        return str(who).split(":")[0] in ("", "root", "0")

    def _take_pending(self) -> str:
        commands, self._pending = [c for _, c in self._pending], []
        return "; ".join(f"{{ {c}; }}" for c in commands)  # each on its own, as when they ran one by one

    async def _settle(self) -> None:
        """Before reading or writing the container as it is: run the deferred preparation (held copies end first)."""
        prep = self._take_pending()
        if prep:
            self._release()
            await self._exec_now(prep, cwd=None, env=None, timeout_sec=None, who="root")

    # -- the directories Harbor prepares --------------------------------------------------------

    async def ensure_dirs(self, dirs: Sequence[Any], *, chmod: bool = True) -> ExecResult | None:
        return await self._prepare_dirs(dirs, chmod=chmod, empty=False)

    async def empty_dirs(self, dirs: Sequence[Any], *, chmod: bool = True) -> ExecResult | None:
        return await self._prepare_dirs(dirs, chmod=chmod, empty=True)

    async def _prepare_dirs(self, dirs: Sequence[Any], *, chmod: bool, empty: bool) -> ExecResult | None:
        """Harbor's directory preparation, except that the verifier's log dir is never world-writable.

        Harbor opens /logs/verifier to every user (mode 777) so a non-root verifier can write its reward; then
        any code the tests run (an agent's build, as `nobody`) can write a reward too. Here it belongs to the
        verifier's user, mode 755. Other dirs keep Harbor's treatment; a copied artifact tree brings its own modes.

        Deferred (None is returned): it runs, as root, before the container's next command, copy out, or upload
        into one of these dirs, so a trial's several preparations cost one or two engine calls, not five."""
        if not dirs:
            return None
        verifier = str(EnvironmentPaths.for_os(self.os).verifier_dir)
        others = [d for d in dirs if str(d) != verifier]
        commands = []
        if others:
            build = self._empty_dirs_command if empty else self._ensure_dirs_command
            commands.append(build(others, chmod=chmod and all(str(d).startswith("/logs/") for d in others)))
        if len(others) < len(dirs):
            q = shlex.quote(verifier)
            owner = self._resolve_user(self.default_user)
            commands.append((f"rm -rf {q}; " if empty else f"[ -L {q} ] && rm -f {q}; ")
                            + f"mkdir -p {q} && chown {shlex.quote(str(owner or 0))} {q} && chmod 755 {q}")
        self._pending.append(([str(d) for d in dirs], " && ".join(f"{{ {c}; }}" for c in commands)))
        return None


_CHORE = re.compile(r"(chmod \+x|rm -f --) ((?:'[^'\n]*'|[\w./@%+=:,-]+)(?: (?:'[^'\n]*'|[\w./@%+=:,-]+))*)")
_IMAGE_USERS: dict[tuple[str, str], str] = {}


async def _image_user(engine: str, image: str) -> str:
    """The user an image's commands run as by default ("" is root); asked once per image and process."""
    if (engine, image) not in _IMAGE_USERS:
        code, out, _ = await _run(engine, "image", "inspect", "--format", "{{.Config.User}}", image, timeout=60)
        if code != 0:
            return "?"
        _IMAGE_USERS[engine, image] = out.strip()
    return _IMAGE_USERS[engine, image]
