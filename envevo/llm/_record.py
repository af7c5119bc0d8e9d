"""Recording a run's model exchanges (`envevo evolve --record DIR`), for replay offline (envevo/llm/_replay.py).

Every answered request of every role is appended to `DIR/exchanges.jsonl` as it happens (one JSON object a line,
flushed, so a crashed run keeps what it got): the role, lineage and generation it was made for, the model, a
digest of the request's first prompt, the whole request (pydantic-ai's message format) and the response. Failed
attempts are not recorded: a replay sees what the retries finally got. Recordings hold prompts and answers in
full, task files included; keys and headers are never part of them.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse

from envevo.llm._errors import LLMConfigError
from envevo.llm._meter import Meter

EXCHANGES = "exchanges.jsonl"
GRAMMAR_ROLES = "grammar-roles.json"  # the roles asked for JSON schema under output_mode "auto" (a replay asks alike)
FORMAT = 1


def prompt_digest(messages: list[ModelMessage]) -> str:
    """What tells two calls of one role apart when their order does not (seeds extracted concurrently)."""
    first = next((m for m in messages if isinstance(m, ModelRequest)), None)
    text = json.dumps(ModelMessagesTypeAdapter.dump_python([first], mode="json")[0]["parts"] if first else [],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Recorder:
    """Appends each exchange to DIR/exchanges.jsonl; attribution comes from the meter's scope of the call."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LLMConfigError(f"cannot create the --record directory {self.directory}: {e}") from e
        self.path = self.directory / EXCHANGES
        self._lock = threading.Lock()
        self._seq = sum(1 for _ in self.path.open(encoding="utf-8")) if self.path.exists() else 0

    def grammar_roles(self, roles: frozenset[str]) -> None:
        """The roles the preflight found on a server that enforces JSON schemas: a replay must ask them the same way."""
        (self.directory / GRAMMAR_ROLES).write_text(json.dumps(sorted(roles)) + "\n", encoding="utf-8")

    def exchange(self, model: str, messages: list[ModelMessage], response: ModelResponse) -> None:
        scope = Meter.current()
        with self._lock:
            entry: dict[str, Any] = {
                "format": FORMAT, "seq": self._seq, "role": scope.role, "lineage": scope.lineage,
                "generation": scope.generation, "model": model, "prompt": prompt_digest(messages),
                "request": ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
                "response": ModelMessagesTypeAdapter.dump_python([response], mode="json")[0],
            }
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
                f.flush()
            self._seq += 1
