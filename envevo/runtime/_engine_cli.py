"""Engine commands from asyncio: a bounded run, and a run that finishes through a cancel (container create/remove)."""

from __future__ import annotations

import asyncio
import subprocess


async def _run(*argv: str, timeout: float | None = None, stdin: bytes | None = None,
               finish_on_cancel: bool = False, limit: int | None = None) -> tuple[int, str, str]:
    """Run an engine command; (exit code, stdout, stderr). A timeout kills the client and raises TimeoutError.

    A cancel kills the client, unless `finish_on_cancel`: a `run` or `rm` killed halfway leaves a container
    behind (created, or still up), so those run to their end (see `_run_to_end`) and the cancel is re-raised.
    `limit` keeps at most that many bytes of each stream (the rest is read and dropped, with a note): a command in
    a container (`cat /dev/zero`) must not fill the host's memory."""
    if finish_on_cancel:
        return await _run_to_end(list(argv), timeout or 120, stdin)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        if limit is None:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        else:
            out, err = await asyncio.wait_for(_bounded(proc, stdin, limit), timeout)
    except (TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def _bounded(proc: asyncio.subprocess.Process, stdin: bytes | None, limit: int) -> tuple[bytes, bytes]:
    async def keep(stream: asyncio.StreamReader | None) -> bytes:
        kept, dropped = bytearray(), 0
        while stream is not None and (chunk := await stream.read(1 << 16)):
            room = max(0, limit - len(kept))
            kept += chunk[:room]
            dropped += len(chunk) - min(room, len(chunk))
        return bytes(kept) + (f"\n[{dropped} more bytes dropped: envevo keeps {limit} bytes of a command's "
                              "output]\n".encode() if dropped else b"")

    if proc.stdin is not None:
        proc.stdin.write(stdin or b"")
        proc.stdin.close()
    out, err = await asyncio.gather(keep(proc.stdout), keep(proc.stderr))
    await proc.wait()
    return out, err


def _run_blocking(argv: list[str], timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
    try:
        # Its own session: a terminal's Ctrl-C (sent to the whole foreground group) must not kill it halfway.
        r = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"{argv[0]} {argv[1]} did not finish within {timeout:.0f} s") from exc
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


async def _run_to_end(argv: list[str], timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
    """Run a command in a worker thread and wait for it through any cancel, then re-raise the cancel.

    Not an asyncio subprocess: Harbor shields the stop of a sandbox and lets it run on when its trial is cancelled
    at that moment, so asyncio.run's final cancel of stray tasks can reach a stop; an asyncio child process
    cancelled then was seen to hang the interpreter's exit with the container still up (Ctrl-C during red-team
    trials, whose sandboxes stop often). A thread is not cancelled, its future is not a task, and the executor is
    joined before the process exits."""
    done = asyncio.get_running_loop().run_in_executor(None, _run_blocking, argv, timeout, stdin)
    cancelled: asyncio.CancelledError | None = None
    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    return done.result()
