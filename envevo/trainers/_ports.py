"""A server's port, checked before anything heavy loads or any trial starts: one line when it cannot be served."""

from __future__ import annotations

import errno
import socket

from envevo.errors import UserError


def check_port(host: str, port: int) -> None:
    """One line, before any trial starts, when HOST:PORT cannot be served."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise UserError(f"port {port} on {host} {why}; choose another with --port") from None
