"""Process facts shared by the modules that clean up after dead envevo processes."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (one we may not signal still counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def die_with_parent(nice: int = 0) -> None:
    """For `preexec_fn`: the child gets SIGTERM when the process that started it dies, even by SIGKILL or a SIGTERM
    that skips its cleanup (Linux's PR_SET_PDEATHSIG), so a helper server never outlives its owner; then `nice`."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if nice:
        os.nice(nice)
