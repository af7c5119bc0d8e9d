"""The rule-based stand-in for the rubric verifier: checks a composed task's form, not its behaviour."""

from __future__ import annotations

import ast
import re
from typing import Any

from envevo.catalog import build_blocks, chain_from_task, harmless_steps
from envevo.task import Task

_SECRET_NAMES = re.compile(r"(^|/)(solve\.sh|test\.sh|test_outputs\.py)$")


def _checks(task: Task) -> list[dict[str, Any]] | None:
    try:
        tree = ast.parse(task.read_text("tests/test_outputs.py"))
    except Exception:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CHECKS" for t in node.targets):
            try:
                checks: list[dict[str, Any]] = ast.literal_eval(node.value)
                return checks
            except ValueError:
                return None
    return None


def quality_check(task: Task) -> list[str]:
    """Problems found (empty = fine): every step's wrong variant changes the checked output, every produced file is
    named in the instruction, the image holds no solution or test files, and the tests compare real values for every
    produced file."""
    problems: list[str] = []
    try:
        blocks = build_blocks(chain_from_task(task))
    except Exception as e:  # not ours, or a chain that no longer generates
        return [f"cannot rebuild the chain from [metadata.envevo]: {e}"]
    produced = sorted({p for b in blocks for p in b.produces})
    # Before any container: every step's plausible mistake must change what the tests check (on the drawn data, by
    # the skill's model of it); the mutation verifier then runs the mistakes in the sandbox.
    problems += [f"step {b.index + 1} ({b.scenario}/{b.skill}): its wrong variant gives the checked output on these "
                 "fixtures, so the tests cannot tell the mistake from the skill; draw the step's fixtures again"
                 for b in harmless_steps(blocks)]

    text = task.read_text("instruction.md") if task.has("instruction.md") else ""
    problems += [f"instruction.md does not mention {p}" for p in produced if p not in text]

    for path in task.paths("environment"):
        if _SECRET_NAMES.search(path) or path.startswith(("environment/solution/", "environment/tests/")):
            problems.append(f"{path} puts solution or test files into the build context")
    docker = task.read_text("environment/Dockerfile") if task.has("environment/Dockerfile") else ""
    for line in docker.splitlines():
        if re.match(r"\s*(COPY|ADD)\b", line, re.I) and re.search(r"\b(solution|tests|solve\.sh|test_outputs)\b", line):
            problems.append(f"the Dockerfile copies solution or test files: {line.strip()}")

    checks = _checks(task)
    if not checks:
        problems.append("tests/test_outputs.py has no readable CHECKS list")
        return problems
    checked = {c.get("path") for c in checks}
    problems += [f"the tests never check {p}" for p in produced if p not in checked]
    for c in checks:
        want = c.get("expected")
        if want is None or want == [] or want == {} or want == "":
            problems.append(f"the check of {c.get('path')} compares against nothing")
    if task.has("tests/test.sh") and "reward.txt" not in task.read_text("tests/test.sh"):
        problems.append("tests/test.sh does not write /logs/verifier/reward.txt")
    return problems
