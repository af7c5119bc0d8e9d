"""The Modifier's shell: the candidate's own sandbox, a session opened through `envevo.runtime.open_session`.

It is the environment the verifier's trials get, on the same `--env` (envevo's local podman/docker environment,
Harbor's compose environments, any Harbor cloud type): the same image, built from the candidate's environment/
and cached by content digest (so the shell's build warms the trials' cache and vice versa), and the task's own
network policy. Never the host.

- One container per candidate draft, opened at the first command and kept: files and processes persist between
  commands. It is keyed by the draft dir and its environment content (environment/ and task.toml's
  `[environment]` table); when the Modifier edits either, the next command gets a fresh container from the
  rebuilt image, and its output says so.
- Commands run one at a time, in order. Each is bounded by `timeout` inside the container (so a runaway command
  is killed there, not merely abandoned) and by the session's own timeout on the outside.
- solution/ and tests/ are uploaded on request to /solution and /tests, where the trials put them: a fresh copy
  each time (the Modifier may have edited them), replacing the previous one.
- `run_tests` runs solve.sh then test.sh the way the oracle trial does, in a fresh container from the image, and
  returns the verifiers' failure digest (`envevo.verify.run_digest`) of what they left in /logs/verifier.
- The session closes when the candidate's Modifier run ends, also on errors and cancellation (`open_session`
  shields the stop), so no sandbox is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shlex
import time
import tomllib
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel

from envevo.runtime import DEFAULT_ENGINE, SandboxSession, SessionError, environment_digest, network_policy, open_session
from envevo.verify import reward_of, run_digest

OUTPUT_LIMIT = 12_000
KILL_GRACE_SEC = 5  # after the in-container timeout's TERM, a KILL
COMPOSE_FILE = "docker-compose.yaml"
_SPLIT = "--envevo-verifier-file--"
_VERIFIER_FILES = ("reward.txt", "reward.json", "ctrf.json")


class CommandResult(BaseModel):
    exit_code: int | None
    output: str
    timed_out: bool = False
    note: str = ""  # e.g. the container was restarted from a rebuilt image before this command

    def summary(self) -> str:
        head = "timed out" if self.timed_out else f"exit code {self.exit_code}"
        return (f"[{self.note}]\n" if self.note else "") + f"[{head}]\n{self.output}"


class ShellError(Exception):
    """The container could not be started (no environment definition, a failing build); the message says why."""


class ShellFacts(BaseModel):
    """What the Modifier is told about its shell, read from the candidate as it is now."""

    timeout_sec: float
    network: str  # "no-network", "public" or "allowlist"
    allowed_hosts: list[str] = []
    compose_services: list[str] = []  # the compose task's other services (sidecars); empty for Dockerfile tasks
    compose: bool = False
    # [verifier] environment_mode = "separate": the trials run the tests in a container of their own (tests/Dockerfile)
    separate_verifier: bool = False


def clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Keep the start and the end of long output: errors usually sit at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit} characters cut …]\n{text[-half:]}"


def _task_table(task_dir: Path, name: str) -> dict[str, Any]:
    try:
        table = tomllib.loads((task_dir / "task.toml").read_text()).get(name)
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return dict(table) if isinstance(table, dict) else {}


def _environment_table(task_dir: Path) -> dict[str, Any]:
    return _task_table(task_dir, "environment")


def sandbox_key(task_dir: Path) -> str:
    """What the container is built and configured from: environment/'s content and task.toml's [environment]."""
    env_dir = task_dir / "environment"
    content = environment_digest(env_dir) if env_dir.is_dir() else "-"
    table = json.dumps(_environment_table(task_dir), sort_keys=True, default=str)
    return f"{content}:{hashlib.sha256(table.encode()).hexdigest()[:12]}"


def _wrapped(command: str, timeout_sec: int) -> str:
    """`command` under the container's own `timeout` (when the image has one), stderr merged in order."""
    inner = shlex.quote(command)
    return (f"if command -v timeout >/dev/null 2>&1; then exec timeout -k {KILL_GRACE_SEC} {timeout_sec} bash -c {inner} 2>&1; "
            f"else exec bash -c {inner} 2>&1; fi")


class ShellSession:
    """One candidate draft's container. Opened lazily, reopened when its environment changes, closed on exit."""

    def __init__(self, shell: ContainerShell, task_dir: Path):
        self.shell = shell
        self.task_dir = Path(task_dir)
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: SandboxSession | None = None
        self._key: str | None = None
        self._lock = asyncio.Lock()  # one command at a time, including the (re)open and the uploads before it
        self.opened = 0  # how many containers this session started

    async def __aenter__(self) -> ShellSession:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    def facts(self) -> ShellFacts:
        return self.shell.facts(self.task_dir)

    async def close(self) -> None:
        stack, self._stack, self._session, self._key = self._stack, None, None, None
        if stack is not None:
            await stack.aclose()

    async def _ensure(self) -> tuple[SandboxSession, str]:
        key = sandbox_key(self.task_dir)
        note = ""
        if self._session is not None and key == self._key:
            return self._session, note
        if self._session is not None:
            await self.close()
            note = ("the environment changed (environment/ or task.toml [environment]): this command runs in a fresh "
                    "container started from the new image; files and processes from earlier commands are gone")
        stack = contextlib.AsyncExitStack()
        try:
            session = await stack.enter_async_context(
                open_session(self.task_dir, env=self.shell.env, start_timeout_sec=self.shell.start_timeout_sec))
            # The verifier writes its reward there; make it exist on every environment type, as in the trials.
            await session.exec("mkdir -p /logs/verifier", user="root", timeout_sec=60)
        except SessionError as e:
            await stack.aclose()
            raise ShellError(str(e)) from None
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self._session, self._key = stack, session, key
        self.opened += 1
        return session, note

    async def _fresh_copy(self, session: SandboxSession, sub: str) -> None:
        target = f"/{sub}"
        await session.exec(f"rm -rf {target}", user="root", timeout_sec=60)
        if (self.task_dir / sub).is_dir():
            await session.upload(self.task_dir / sub, target)

    async def run(self, command: str, *, timeout_sec: float | None = None, upload_solution: bool = False,
                  upload_tests: bool = False) -> CommandResult:
        timeout = max(1, int(min(timeout_sec or self.shell.timeout_sec, self.shell.timeout_sec)))
        async with self._lock:
            session, note = await self._ensure()
            for flag, sub in ((upload_solution, "solution"), (upload_tests, "tests")):
                if flag:
                    await self._fresh_copy(session, sub)
            t0 = time.monotonic()
            result = await session.exec(_wrapped(command, timeout), timeout_sec=timeout + KILL_GRACE_SEC + 30)
            elapsed = time.monotonic() - t0
        # `timeout` exits 124 (137 if it had to KILL) when the command ran out of time.
        timed_out = result.timed_out or (result.exit_code in (124, 137) and elapsed >= timeout - 0.5)
        return CommandResult(exit_code=None if timed_out else result.exit_code, output=clip(result.output),
                             timed_out=timed_out, note=note)


    async def run_tests(self, *, with_solution: bool = True) -> str:
        """solve.sh (unless `with_solution` is False: the empty agent) then test.sh, in a fresh container from the
        image, as the trials run them; the digest of the run. The session continues in that container."""
        async with self._lock:
            await self.close()  # the trials start from the image, not from what earlier commands left
        await self.run("rm -rf /logs/verifier/* /solution /tests")
        solve = await self.run("bash /solution/solve.sh", upload_solution=True) if with_solution else None
        await self.run("rm -f " + " ".join(f"/logs/verifier/{f}" for f in _VERIFIER_FILES))  # as Harbor does
        test = await self.run("bash /tests/test.sh", upload_tests=True)
        async with self._lock:
            session, _ = await self._ensure()
            read = await session.exec("; ".join(f"cat /logs/verifier/{f} 2>/dev/null; echo {_SPLIT}" for f in _VERIFIER_FILES),
                                      timeout_sec=60)
        reward_txt, reward_json, ctrf_text, *_ = [*read.stdout.split(_SPLIT + "\n"), "", "", ""]
        try:
            ctrf = json.loads(ctrf_text) if ctrf_text.strip() else None
        except ValueError:
            ctrf = None
        notes = [f"{name} timed out" for name, r in (("solve.sh", solve), ("test.sh", test)) if r is not None and r.timed_out]
        if self.facts().separate_verifier:
            notes.append("in the trials these tests run in a separate verifier environment (tests/Dockerfile) that "
                         "sees only the declared artifacts; here they ran in this container")
        digest = run_digest(test_stdout=test.output, ctrf=ctrf if isinstance(ctrf, dict) else None,
                            reward=reward_of(reward_txt, reward_json),
                            solve_output=solve.output if solve is not None else None,
                            solve_exit=solve.exit_code if solve is not None else None)
        return "".join(f"[{n}]\n" for n in notes) + digest


class ContainerShell:
    """The Modifier's shell on the verification environment `env`; `session(task_dir)` gives one candidate's."""

    def __init__(self, env: str = DEFAULT_ENGINE, timeout_sec: float = 300.0, start_timeout_sec: float = 1800.0):
        self.env = env
        self.timeout_sec = timeout_sec
        self.start_timeout_sec = start_timeout_sec

    def session(self, task_dir: Path) -> ShellSession:
        return ShellSession(self, task_dir)

    def facts(self, task_dir: Path) -> ShellFacts:
        task_dir = Path(task_dir)
        table = _environment_table(task_dir)
        mode = str(table.get("network_mode") or ("no-network" if table.get("allow_internet") is False else "public"))
        # Harbor's own reading of the policy when the task.toml is valid, else the table's as read above.
        mode, hosts = network_policy(task_dir, default=mode)
        compose_file = task_dir / "environment" / COMPOSE_FILE
        compose = compose_file.is_file()
        services: list[str] = []
        if compose:
            with contextlib.suppress(Exception):
                import yaml

                services = sorted(s for s in (yaml.safe_load(compose_file.read_text()) or {}).get("services", {}) if s != "main")
        verifier = _task_table(task_dir, "verifier")
        separate = (verifier.get("environment_mode") or ("separate" if verifier.get("environment") else None)) == "separate"
        return ShellFacts(timeout_sec=self.timeout_sec, network=mode, allowed_hosts=hosts, compose=compose,
                          compose_services=services, separate_verifier=separate)
