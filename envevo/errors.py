"""Errors a user can cause (the CLI prints them as one line and exits non-zero, never a traceback), and exit codes."""

from enum import IntEnum


class UserError(Exception):
    """Bad input or a missing prerequisite. The message names what is wrong and, where possible, the fix."""


class TaskError(UserError):
    """A task directory that cannot be loaded, saved or run as given."""


class EngineStop(Exception):
    """An engine ends its lineage (e.g. a spent LLM budget); `status` is recorded with the message as reason.
    The generation in flight is not committed, so the lineage can be resumed once the cause is fixed."""

    status = "terminated"


class CandidateFailed(Exception):
    """An engine's modify() produced no candidate worth verifying; the message is fed back like a verifier's reason."""


class ExitCode(IntEnum):
    """What a command's exit status says (docs/cli.md has the table)."""

    OK = 0
    FAIL = 1
    USAGE = 2
    INCONCLUSIVE = 3
    WEAK = 4
    ALL_SEEDS_REJECTED = 5
