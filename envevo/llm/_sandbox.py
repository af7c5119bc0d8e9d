"""Run a command inside a candidate task's container, for the Modifier: never on the host.

The image is built from the candidate's environment/ with the same content-derived tag the runtime's image
cache uses, so a shell build doubles as the warm cache for the verification trials that follow (and vice
versa). Containers run with `--network=none`, a timeout, and `--rm`; a timed-out container is force-removed.
The candidate's solution/ and tests/ can be mounted read-only at /solution and /tests, where the trials put
them, so the Modifier can run the reference solution and the tests to compute exact expected values.
Images are never removed here.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from pydantic import BaseModel

from envevo.llm._loops import PerLoop
from envevo.runtime import CACHE_REPO, environment_digest

OUTPUT_LIMIT = 12_000


class CommandResult(BaseModel):
    exit_code: int | None
    output: str
    timed_out: bool = False

    def summary(self) -> str:
        head = "timed out" if self.timed_out else f"exit code {self.exit_code}"
        return f"[{head}]\n{self.output}"


class ShellError(Exception):
    """The container could not be started (no Dockerfile, a failing build); the message says why."""


def clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Keep the start and the end of long output: errors usually sit at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit} characters cut …]\n{text[-half:]}"


async def _exec(*argv: str, timeout: float) -> tuple[int | None, str, bool]:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                stdin=asyncio.subprocess.DEVNULL)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        return proc.returncode, out.decode("utf-8", "replace"), False
    except TimeoutError:
        proc.kill()
        out = b""
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 10)
        except TimeoutError:
            pass
        return None, out.decode("utf-8", "replace"), True


class ContainerShell:
    """`podman run --rm --network=none IMAGE bash -lc CMD` for a task dir, one command at a time per shell."""

    def __init__(self, engine: str = "podman", timeout_sec: float = 300.0, build_timeout_sec: float = 1200.0,
                 concurrency: int = 1):
        self.engine = engine
        self.timeout_sec = timeout_sec
        self.build_timeout_sec = build_timeout_sec
        self.concurrency = concurrency
        self._gate = PerLoop(lambda: asyncio.Semaphore(self.concurrency))

    async def image_for(self, task_dir: Path, docker_image: str | None = None) -> str:
        env_dir = task_dir / "environment"
        if not (env_dir / "Dockerfile").is_file():
            if docker_image:
                return docker_image
            raise ShellError("the task has no environment/Dockerfile (compose environments are not supported by this tool)")
        tag = f"{CACHE_REPO}:{environment_digest(env_dir)}"
        code, _, _ = await _exec(self.engine, "image", "exists", tag, timeout=60)
        if code == 0:
            return tag
        code, out, timed_out = await _exec(self.engine, "build", "-t", tag, str(env_dir), timeout=self.build_timeout_sec)
        if timed_out:
            raise ShellError(f"building environment/ took longer than {self.build_timeout_sec:.0f}s")
        if code != 0:
            raise ShellError(f"building environment/ failed (exit {code}):\n{clip(out, 4000)}")
        return tag

    async def run(self, task_dir: Path, command: str, *, timeout_sec: float | None = None, docker_image: str | None = None,
                  mount_solution: bool = False, mount_tests: bool = False) -> CommandResult:
        timeout = min(timeout_sec or self.timeout_sec, self.timeout_sec)
        async with self._gate.get():
            image = await self.image_for(task_dir, docker_image)
            name = f"envevo-shell-{uuid.uuid4().hex[:12]}"
            argv = [self.engine, "run", "--rm", "--name", name, "--network=none", "--pull=never"]
            for mounted, sub in ((mount_solution, "solution"), (mount_tests, "tests")):
                if mounted and (task_dir / sub).is_dir():
                    argv += ["--volume", f"{(task_dir / sub).resolve()}:/{sub}:ro"]
            argv += [image, "bash", "-lc", command]
            code, out, timed_out = await _exec(*argv, timeout=timeout)
            if timed_out:
                await _exec(self.engine, "rm", "-f", name, timeout=60)
        return CommandResult(exit_code=code, output=clip(out), timed_out=timed_out)
