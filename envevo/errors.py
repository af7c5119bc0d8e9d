"""Errors a user can cause. The CLI prints them as one line and exits non-zero, never a traceback."""


class UserError(Exception):
    """Bad input or a missing prerequisite. The message names what is wrong and, where possible, the fix."""


class TaskError(UserError):
    """A task directory that cannot be loaded, saved or run as given."""
