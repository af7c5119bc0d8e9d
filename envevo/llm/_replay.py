"""Replaying a recorded run's model exchanges offline (`envevo evolve --replay DIR`, and tests).

A `Replay` reads DIR/exchanges.jsonl (envevo/llm/_record.py) and serves, to each role's `ReplayModel`, the
recorded responses of that (role, lineage, generation) in their recorded order; among several waiting, the one
whose first prompt matches comes first (seeds extracted concurrently). No request leaves the process. A run
that asks for more than was recorded has diverged (a changed prompt, rubric, seed or option): it stops with one
line naming the exchange it lacked. Usage and cost are metered from the recorded responses, as in the original.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from envevo.llm._config import ROLES
from envevo.llm._errors import LLMConfigError
from envevo.llm._meter import Meter
from envevo.llm._record import EXCHANGES, GRAMMAR_ROLES, prompt_digest

Key = tuple[str, str | None, int | None]


class ReplayDiverged(LLMConfigError):
    """The run asked for an exchange the recording does not have."""


class Replay:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        path = self.directory / EXCHANGES
        if not path.is_file():
            raise LLMConfigError(f"--replay {self.directory}: no {EXCHANGES} there; record one with --record DIR")
        self._queues: dict[Key, list[dict[str, Any]]] = defaultdict(list)
        self.models: dict[str, str] = {}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
                self._queues[(e["role"], e["lineage"], e["generation"])].append(e)
                self.models.setdefault(e["role"], e["model"])
            except (ValueError, KeyError, TypeError) as err:
                raise LLMConfigError(f"{path}:{n} is not a recorded exchange ({err})") from err
        self._lock = threading.Lock()
        self.served = 0
        grammar = self.directory / GRAMMAR_ROLES  # absent in recordings made before output_mode "auto": tool calls
        try:
            self.grammar_roles = frozenset(json.loads(grammar.read_text(encoding="utf-8"))) if grammar.is_file() else frozenset()
        except (ValueError, TypeError) as err:
            raise LLMConfigError(f"{grammar} is not a list of roles ({err})") from err

    def remaining(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def next(self, messages: list[ModelMessage]) -> ModelResponse:
        scope = Meter.current()
        key = (scope.role, scope.lineage, scope.generation)
        digest = prompt_digest(messages)
        with self._lock:
            queue = self._queues.get(key) or []
            if not queue:
                where = f"lineage {scope.lineage} generation {scope.generation}" if scope.lineage else "no lineage"
                raise ReplayDiverged(
                    f"the recording in {self.directory} has no more exchanges for the {scope.role} ({where}): this run "
                    "diverged from the recorded one (a changed prompt, rubric, seed or option); record it again")
            pick = next((i for i, e in enumerate(queue) if e["prompt"] == digest), 0)
            entry = queue.pop(pick)
            self.served += 1
        return ModelMessagesTypeAdapter.validate_python([entry["response"]])[0]  # type: ignore[return-value]

    def role_models(self) -> dict[str, Model]:
        return {r: ReplayModel(self, self.models.get(r, "replayed")) for r in ROLES}


class ReplayModel(Model):
    """A role's model that answers from a recording."""

    def __init__(self, replay: Replay, label: str):
        super().__init__()
        self._replay = replay
        self._name = label.partition(":")[2] or label

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def system(self) -> str:
        return "replay"

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        return self._replay.next(messages)
