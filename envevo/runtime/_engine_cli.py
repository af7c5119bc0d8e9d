"""Engine commands from asyncio: a bounded run, and a run that finishes through a cancel (container create/remove)."""

from __future__ import annotations

import asyncio
import os
import subprocess


async def _run(*argv: str, timeout: float | None = None, finish_on_cancel: bool = False,
               limit: int | None = None) -> tuple[int, str, str]:
    """Run an engine command; (exit code, stdout, stderr). A timeout kills the client and raises TimeoutError.

    A cancel kills the client, unless `finish_on_cancel`: a `run` or `rm` killed halfway leaves a container
    behind (created, or still up), so those run to their end (see `_run_to_end`) and the cancel is re-raised.
    `limit` keeps at most that many bytes of each stream (the rest is read and dropped, with a note): a command in
    a container (`cat /dev/zero`) must not fill the host's memory."""
    if finish_on_cancel:
        return await _run_to_end(list(argv), timeout or 120)
    code, out, err = await _collect(list(argv), timeout=timeout, limit=limit)
    return code, out.decode(errors="replace"), err.decode(errors="replace")


async def _collect(argv: list[str], *, timeout: float | None = None, limit: int | None = None,
                   merge_stderr: bool = False) -> tuple[int, bytes, bytes]:
    """Run `argv` with stdin closed; (exit code, stdout, stderr), stderr inside stdout when `merge_stderr`.

    Not asyncio's subprocess machinery: it finishes a child's setup in a task of its own, and asyncio.run's final
    cancel of stray tasks (after Ctrl-C) can cancel that task before it runs; a child whose creation was being
    cancelled at that moment then waits forever for an exit that is never delivered, and the interpreter hangs at
    exit (1 Ctrl-C in 12 during red-team trials). Here the pipes are read by loop callbacks and the exit is polled,
    so a cancel at any point kills the child and returns."""
    loop = asyncio.get_running_loop()
    pipes = [os.pipe() for _ in range(1 if merge_stderr else 2)]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=pipes[0][1], stderr=pipes[-1][1])
    except BaseException:
        for fd in (fd for pair in pipes for fd in pair):
            os.close(fd)
        raise
    for _, w in pipes:  # the child holds its own copies; EOF comes when it (and what it spawned) lets go
        os.close(w)
    sinks = [_Sink(loop, r, limit) for r, _ in pipes]
    try:
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(s.eof for s in sinks))
            code = await _exit_code(proc)
    except BaseException:  # a timeout or a cancel
        _kill(proc)
        raise
    finally:
        for sink in sinks:
            sink.close()
    return code, sinks[0].data(), b"" if merge_stderr else sinks[1].data()


async def _exit_code(proc: subprocess.Popen[bytes]) -> int:
    # Its output has ended, so the child is exiting: polled from 1 ms up to every 50 ms.
    delay = 0.001
    while (code := proc.poll()) is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return code


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        try:
            proc.wait(timeout=10)  # a killed client exits at once; reaped here, so no zombie is left
        except subprocess.TimeoutExpired:
            pass


class _Sink:
    """One output pipe, read as it becomes readable; keeps `limit` bytes and counts the rest."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, limit: int | None):
        self._loop, self._fd, self._limit = loop, fd, limit
        self._kept, self._dropped = bytearray(), 0
        self.eof: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self._fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._loop.remove_reader(self._fd)
            if not self.eof.done():
                self.eof.set_result(None)
            return
        room = len(chunk) if self._limit is None else max(0, self._limit - len(self._kept))
        self._kept += chunk[:room]
        self._dropped += len(chunk) - min(room, len(chunk))

    def drain(self, chunks: int = 64) -> None:
        """Read what is in the pipe now (a writer that outlived the command may hold it open: no EOF to wait for)."""
        for _ in range(chunks):
            if self._fd < 0 or self.eof.done():
                return
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            room = len(chunk) if self._limit is None else max(0, self._limit - len(self._kept))
            self._kept += chunk[:room]
            self._dropped += len(chunk) - min(room, len(chunk))

    def close(self) -> None:
        if self._fd < 0:
            return
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = -1

    def data(self) -> bytes:
        note = (f"\n[{self._dropped} more bytes dropped: envevo keeps {self._limit} bytes of a command's output]\n"
                if self._dropped else "")
        return bytes(self._kept) + note.encode()


async def run_to_exit(argv: list[str], *, timeout: float | None, limit: int | None) -> tuple[int, str, str]:
    """Like `_run`, but done when the process exits, not when its output ends: what it wrote is read, and a
    daemon it left holding the pipes does not hold up the caller (as `podman exec` returns when its command exits)."""
    loop = asyncio.get_running_loop()
    pipes = [os.pipe(), os.pipe()]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=pipes[0][1], stderr=pipes[1][1])
    except BaseException:
        for fd in (fd for pair in pipes for fd in pair):
            os.close(fd)
        raise
    for _, w in pipes:
        os.close(w)
    sinks = [_Sink(loop, r, limit) for r, _ in pipes]
    try:
        async with asyncio.timeout(timeout):
            code = await _exit_code(proc)
        for sink in sinks:
            sink.drain()
    except BaseException:
        _kill(proc)
        raise
    finally:
        for sink in sinks:
            sink.close()
    return code, sinks[0].data().decode(errors="replace"), sinks[1].data().decode(errors="replace")


def _run_blocking(argv: list[str], timeout: float) -> tuple[int, str, str]:
    try:
        # Its own session: a terminal's Ctrl-C (sent to the whole foreground group) must not kill it halfway.
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                           start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"{argv[0]} {argv[1]} did not finish within {timeout:.0f} s") from exc
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


async def _run_to_end(argv: list[str], timeout: float) -> tuple[int, str, str]:
    """Run a command in a worker thread and wait for it through any cancel, then re-raise the cancel.

    Not an asyncio subprocess: Harbor shields the stop of a sandbox and lets it run on when its trial is cancelled
    at that moment, so asyncio.run's final cancel of stray tasks can reach a stop; an asyncio child process
    cancelled then was seen to hang the interpreter's exit with the container still up (Ctrl-C during red-team
    trials, whose sandboxes stop often). A thread is not cancelled, its future is not a task, and the executor is
    joined before the process exits."""
    done = asyncio.get_running_loop().run_in_executor(None, _run_blocking, argv, timeout)
    cancelled: asyncio.CancelledError | None = None
    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    return done.result()
