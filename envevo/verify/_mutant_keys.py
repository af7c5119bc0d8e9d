"""Mutant identities: a content hash of what decides a mutant's verdict, so that a killed verdict is reused only on
the same inputs (issue 26, cost control). Nothing here runs anything.

A mutant runs as an oracle trial of a copy of the task. What that trial reads, and so all that decides its verdict:
the image (everything under environment/: Dockerfile or compose file, fixtures), the solution the oracle agent runs
(solution/, with the mutant's solve.sh), the tests (tests/), the limits and modes Harbor runs them with (task.toml
outside `[metadata]`), and the sandbox backend. The oracle agent never reads instruction.md and no runtime reads
`[metadata]`, which is why a residual edit (a new instruction, a new trace) leaves a mutant's inputs alone.

- The **task key** hashes exactly those bytes of the mutant's task copy (each path, its bytes and executable bit),
  with the backend. Equal keys are the same trial.
- The **step key** of a procedural mutant (step t wrong or skipped) hashes less, so that a length edit after step t
  keeps it: the Dockerfile, the fixture scripts of steps 1..t, solve.sh up to the end of step t (step t mutated),
  step t's own checks, tests/test.sh, the test runner (test_outputs.py without its CHECKS list), and task.toml
  without `[metadata]`, the `[task]` labels and the agent's time limit. It exists only when the task is its
  chain's, byte for byte (the environment holds the Dockerfile and exactly the chain's fixture scripts, tests/ the
  generated test.sh and a runner whose CHECKS are the chain's, solution/ only solve.sh), and no later step writes a
  path step t's checks read. It certifies a kill only when the killing trial failed one of step t's own checks
  (`step_failed`). Why that is enough: the tests' reward is 1 only if every check passes; step t's checked files
  are made by steps 1..t alone (each subshell reads the previous step's output and its own scenario's fixtures,
  whose paths are disjoint from other scenarios'), from fixtures built by identical scripts, and nothing after step
  t writes them; so the same check fails again. The agent's time limit only bounds how much of the script runs, and
  a check on a file never written fails too. Any byte that leaves the task its chain's, or changes one of the
  hashed inputs, gives no key or another key: a new run.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from typing import Any

from envevo.task import Task

_TASK = b"envevo-mutant-task/1"
_STEP = b"envevo-mutant-step/1"
_EQUIVALENT = b"envevo-mutant-equivalent/1"
_NOT_TRIAL_INPUTS = {"instruction.md", "task.toml"}  # task.toml enters without [metadata]
TESTS_PY = "tests/test_outputs.py"
_FAIL = re.compile(r"^FAIL (\S+) (.+?) - ", re.MULTILINE)  # the generated runner's line for a failed check


def _digest(tag: bytes, parts: list[bytes]) -> str:
    """sha256 over length-prefixed parts: no two different part lists share an encoding."""
    h = hashlib.sha256(tag)
    for p in parts:
        h.update(len(p).to_bytes(8, "big"))
        h.update(p)
    return h.hexdigest()


def _config(task: Task, drop: tuple[str, ...] = ("metadata",), agent_timeout: bool = True) -> bytes:
    config = {k: v for k, v in task.config.items() if k not in drop}
    if not agent_timeout and isinstance(config.get("agent"), dict):
        config["agent"] = {k: v for k, v in config["agent"].items() if k != "timeout_sec"}
    return json.dumps(config, sort_keys=True, default=str).encode()


def task_key(variant: Task, env: str) -> str:
    """The task key of a mutant's task copy on the backend `env`."""
    parts = [env.encode(), _config(variant)]
    for path in sorted(variant.files):
        if path in _NOT_TRIAL_INPUTS:
            continue
        f = variant.files[path]
        parts += [path.encode(), b"x" if f.executable else b"-", f.data]
    return _digest(_TASK, parts)


def equivalence_key(mutant_key: str, reference_key: str) -> str:
    """What an equivalent verdict rests on: the mutant's inputs and the full solution's (its task key), since
    "equivalent" means "ends as that solution does"."""
    return _digest(_EQUIVALENT, [mutant_key.encode(), reference_key.encode()])


def env_key(env: str, step_key: str) -> str:
    """A step key bound to the backend it ran on."""
    return _digest(_STEP, [env.encode(), step_key.encode()])


def _nested(a: str, b: str) -> bool:
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _runner_and_checks(text: str) -> tuple[str, Any] | None:
    """test_outputs.py without its CHECKS assignment, and the CHECKS literal; None when it is not that shape."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    node = next((n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "CHECKS"), None)
    if node is None or node.end_lineno is None:
        return None
    try:
        checks = ast.literal_eval(node.value)
    except ValueError:
        return None
    lines = text.splitlines(keepends=True)
    return "".join(lines[: node.lineno - 1] + lines[node.end_lineno:]), checks


def step_keys(task: Task, chain: Any, blocks: list[Any]) -> dict[tuple[int, str], str]:
    """(0-based step, mutant kind: wrong | skip) -> step key; empty when the task is not its chain's byte for byte
    (see the module docstring)."""
    from envevo.catalog import fixture_script, solve_script

    env_files = {p: f for p, f in task.files.items() if p.startswith("environment/")}
    fixtures = [fixture_script(b.fixtures) for b in blocks]
    dockerfile = env_files.pop("environment/Dockerfile", None)
    if dockerfile is None or sorted(f.data.decode("utf-8", "replace") for f in env_files.values()) != sorted(fixtures):
        return {}
    if sorted(p for p in task.files if p.startswith(("tests/", "solution/"))) != [
            "solution/solve.sh", "tests/test.sh", TESTS_PY]:
        return {}
    if set(task.files) - set(env_files) - {"environment/Dockerfile", "instruction.md", "solution/solve.sh",
                                           "tests/test.sh", TESTS_PY}:
        return {}
    parsed = _runner_and_checks(task.files[TESTS_PY].data.decode("utf-8", "replace"))
    if parsed is None or parsed[1] != [c for b in blocks for c in b.checks]:
        return {}
    runner = parsed[0]
    test_sh = task.files["tests/test.sh"]
    config = _config(task, drop=("metadata", "task"), agent_timeout=False)
    out: dict[tuple[int, str], str] = {}
    for b in blocks:
        read = [c["path"] for c in b.checks]
        later = [p for later in blocks[b.index + 1:] for p in later.produces]
        if not read or any(_nested(p, q) for p in read for q in later):
            continue  # a later step writes what step t's checks read: its checks are not step t's alone
        for kind in ("wrong", "skip"):
            # The mutant's solve.sh through step t: the same function writes the whole script (envevo.catalog).
            one = {b.index}
            prefix = solve_script(chain, wrong=one if kind == "wrong" else (), skip=one if kind == "skip" else (),
                                  blocks=blocks[: b.index + 1])
            parts = [dockerfile.data, *(s.encode() for s in fixtures[: b.index + 1]), prefix.encode(),
                     json.dumps(b.checks, sort_keys=True).encode(), b"x" if test_sh.executable else b"-",
                     test_sh.data, runner.encode(), b"x" if task.files["solution/solve.sh"].executable else b"-",
                     config]
            out[(b.index, kind)] = _digest(_STEP, parts)
    return out


def step_failed(checks: list[tuple[str, str]], test_stdout: str) -> bool:
    """Whether the tests' output shows one of these (check kind, path) failing."""
    failed = {(m.group(1), m.group(2)) for m in _FAIL.finditer(test_stdout)}
    return any(c in failed for c in checks)
