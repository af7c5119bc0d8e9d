"""What can go wrong with an LLM role, split by what the caller should do about it.

- `LLMConfigError`, `EndpointUnavailable`: the user fixes a key, a URL or a config file; the CLI prints one line.
- `EndpointDown`: an endpoint kept failing for a whole call's retry budget (envevo/llm/_retry.py). Mid-run it
  ends that lineage as `budget_exhausted`, with the reason, and the others go on; `--resume` reopens it. Before
  any lineage exists (a seed's extraction) it is one line for the user, like `EndpointUnavailable`.
- `BudgetExceeded`: a lineage reached its cost or token cap; the loop ends that lineage as `budget_exhausted`
  and it stays resumable (raise the cap and `--resume`).
- `AnswerTimedOut` (envevo/llm/_guard.py): one answer ran past `answer_timeout_sec`; not retried, the role's `RoleFailed`.
- `RoleFailed`: one role gave no usable answer (malformed output, a refusal) after its retries; the engine turns
  it into a rejected plan, a skipped direction or a failed candidate, so the run goes on.
- `ExtractionFailed`: no usable ξ for a task (a seed the model will not analyse); one line before a run, and the
  end of that lineage mid-run.
- `CandidateFailed`: the Modifier produced no candidate worth verifying; the loop counts a failed attempt.
"""

from __future__ import annotations

from envevo.errors import CandidateFailed as _CandidateBase
from envevo.errors import EngineStop as _StopBase
from envevo.errors import UserError


class LLMConfigError(UserError):
    """A model spec, envevo.toml or rubric file that cannot be used as given."""


class EndpointUnavailable(UserError):
    """A missing key, an unreachable endpoint, or one that kept failing after every retry."""


class EndpointDown(_StopBase, EndpointUnavailable):
    """An endpoint still failing (429, 5xx, timeouts) when its call's retry budget ran out. Resumable."""

    status = "budget_exhausted"


class BudgetExceeded(_StopBase):
    """A lineage spent its cost or token budget. Nothing of the generation in flight is committed."""

    status = "budget_exhausted"

    def __init__(self, lineage: str | None, message: str):
        self.lineage = lineage
        super().__init__(message)


class RoleFailed(Exception):
    """A role's model gave no usable answer within its retries (malformed output, refusal, rejected request)."""

    def __init__(self, role: str, message: str):
        self.role = role
        self.reason = message  # without the role: for callers whose own sentence already names it
        super().__init__(f"{role}: {message}")


class ExtractionFailed(_StopBase, UserError):
    """No usable ξ for a task. Before a run: one line for the user. Mid-run: the lineage ends with this reason."""


class CandidateFailed(_CandidateBase):
    """The Modifier could not produce a candidate; the message is fed back like a verifier's reason."""


EngineStop = _StopBase
