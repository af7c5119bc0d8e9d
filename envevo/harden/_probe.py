"""Run the reference solution in a sandbox and list what it changed: the raw material for the artifacts.

The sandbox is the task's own environment (`envevo.runtime.open_session`, the task's network policy), the solution
uploaded to /solution as Harbor's oracle has it. The listing is read back as text and parsed on the host by
`parse_listing`, which trusts no name."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from envevo.harden._artifacts import LISTING_COMMAND, MARK, Changed, parse_listing
from envevo.runtime import SessionError, open_session


class ProbeError(Exception):
    """The solution could not be run and listed here; the message says why (the harden is then inconclusive)."""


class Probe(BaseModel):
    changed: list[Changed]
    dropped: list[str]
    truncated: bool
    solve_exit: int | None


async def probe_changes(task_dir: Path, env: str, *, timeout_sec: float = 900) -> Probe:
    """The files the reference solution created or changed, by change time after a mark set just before it ran."""
    try:
        async with open_session(task_dir, env, upload={"solution": "/solution"}) as s:
            # One second after the mark: a coarse file-system clock must not date the first write with the mark.
            mark = await s.exec(f": > {MARK} && sleep 1", timeout_sec=60, user="root")
            if mark.exit_code != 0:
                raise ProbeError(f"could not mark the start of the solution's run: {mark.output.strip()[:200]}")
            solve = await s.exec("bash /solution/solve.sh", timeout_sec=timeout_sec)
            listing = await s.exec(f"test -e {MARK} || exit 3; {LISTING_COMMAND}", timeout_sec=300, user="root")
    except SessionError as exc:
        raise ProbeError(f"the sandbox did not start: {exc}") from None
    if listing.exit_code == 3:
        raise ProbeError("the solution removed the run's time mark from /tmp; its changes cannot be listed")
    if listing.exit_code not in (0, 141) or listing.timed_out:  # 141: head closed the pipe on a long listing
        raise ProbeError(f"listing the solution's changes failed (exit {listing.exit_code}): "
                         f"{listing.stderr.strip()[:200] or 'the image may lack GNU find'}")
    changed, dropped, truncated = parse_listing(listing.stdout)
    return Probe(changed=changed, dropped=dropped, truncated=truncated,
                 solve_exit=None if solve.timed_out else solve.exit_code)
