"""The rubric-verifier slot: checks that read a task's files instead of running it.

The LLM judge fills this slot with `--engine llm`; the procedural engine plugs in rule-based checks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from envevo.task import Task
from envevo.verify._verdict import VerifierReport, finding


class TaskVerifier(Protocol):
    name: str

    async def check(self, task: Task, task_dir: Path) -> VerifierReport: ...


class RuleRubric:
    """Rule-based quality checks; `rules(task)` returns the problems found (empty means it passes)."""

    name = "rubric"

    def __init__(self, rules: Callable[[Task], list[str]]):
        self.rules = rules

    async def check(self, task: Task, task_dir: Path) -> VerifierReport:
        problems = self.rules(task)
        return VerifierReport(name=self.name, passed=not problems, findings=[finding(self.name, p) for p in problems])
