"""Compose a chain into a real Harbor task: Dockerfile + per-step fixture scripts, instruction, solve.sh, tests, task.toml."""

from __future__ import annotations

import os
from pathlib import Path

from envevo.catalog import CHAIN_ENGINE as ENGINE
from envevo.catalog import GOAL_CATEGORIES, SCENARIOS, TOOLS, Block, Chain, build_blocks, fixture_script, solve_script
from envevo.evolve.engines.procedural._testgen import TEST_SH, test_outputs, verifier_config
from envevo.task import Task, save

# One fixture script per step, named by its scenario (unique in a chain), so an edit rewrites only the scripts of
# the steps whose fixtures it changes; the scenarios' paths are disjoint, so the scripts' order does not matter.
FIXTURE_DIR = "fixtures"

DOCKERFILE = f"""# Procedural envevo task. The tool layer is the same for every procedural task: the image gives no hint
# which skills a task needs, and the layer is built once and cached for all of them.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends {" ".join(TOOLS)} && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Fixtures are generated inside the build, one script per step, by scripts removed in the same step.
COPY {FIXTURE_DIR}/ /tmp/{FIXTURE_DIR}/
RUN set -e; for f in /tmp/{FIXTURE_DIR}/*.py; do python3 "$f"; done; rm -rf /tmp/{FIXTURE_DIR}
"""


def fixture_path(scenario: str) -> str:
    """The task path of one step's fixture script."""
    return f"environment/{FIXTURE_DIR}/{scenario}.py"


def instruction(chain: Chain, blocks: list[Block]) -> str:
    final = blocks[-1].out_path
    lines = [f"# {GOAL_CATEGORIES[chain.category]['title']}", "", chain.goal.split(": ", 1)[-1], "",
             f"Work through the {len(blocks)} steps below, in order: each step reads what the previous one wrote. "
             "Write every file exactly in the format asked (create directories as needed); intermediate results go "
             f"under `/app/work/`, and the final result is `{final}`. All of them are checked. Do not change any other "
             "file unless a step tells you to."]
    for b in blocks:
        lines += ["", f"## Step {b.index + 1}: {SCENARIOS[b.scenario].title}", "", b.instruction]
    return "\n".join(lines) + "\n"


def compose(chain: Chain) -> Task:
    """The Harbor task for a chain. Deterministic: the same chain always gives the same content hash."""
    blocks = build_blocks(chain)
    checks = [c for b in blocks for c in b.checks]
    task = Task()
    task.write("environment/Dockerfile", DOCKERFILE)
    for b in blocks:
        task.write(fixture_path(b.scenario), fixture_script(b.fixtures), executable=False)
    task.write("instruction.md", instruction(chain, blocks))
    task.write("solution/solve.sh", solve_script(chain, blocks=blocks), executable=True)
    task.write("tests/test.sh", TEST_SH, executable=True)
    task.write("tests/test_outputs.py", test_outputs(checks), executable=False)
    scen = sorted({s.scenario for s in chain.steps})
    skills = sorted({s.skill for s in chain.steps})
    artifacts = verifier_config(checks)
    task.set_config({
        "schema_version": "1.4",
        # The tests run in a fresh container that sees only these, copied from the agent's container to the same
        # paths: every file and tree the checks read (see verifier_config).
        "artifacts": artifacts,
        "task": {"name": f"envevo/procedural-{chain.category}-{chain.digest()[:10]}", "description": chain.goal,
                 "keywords": ["envevo", "procedural", chain.category]},
        "metadata": {
            "category": chain.category,
            "tags": ["envevo", "procedural", *scen, *skills],
            "envevo": {"engine": ENGINE, "goal": chain.goal, "category": chain.category,
                       "trace": chain.trace().model_dump(mode="json"), "chain": chain.model_dump(mode="json", exclude_none=True)},
        },
        "verifier": {"timeout_sec": 180.0, "environment_mode": "separate"},
        "agent": {"timeout_sec": float(600 + 300 * chain.L)},
        # Procedural tasks need no network (current Harbor spelling of `allow_internet = false`).
        "environment": {"build_timeout_sec": 900.0, "network_mode": "no-network"},
    })
    return task


def write_task(chain: Chain, dest: str | os.PathLike[str], overwrite: bool = False) -> Path:
    return save(compose(chain), dest, overwrite=overwrite)
