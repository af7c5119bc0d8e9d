"""What one doctor check found: ``Check`` and its ``Status``.

Separate so that checks kept outside _doctor (the TLS check in _doctor_tls) return the same type without an
import cycle.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class Status(StrEnum):
    OK = "ok"
    FIXED = "fixed"
    WARN = "warn"  # works, but something a task may need does not (e.g. HTTPS from containers)
    FAIL = "fail"


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    fix: str | None = None  # the command that repairs a failure

    @property
    def ok(self) -> bool:
        return self.status is not Status.FAIL
