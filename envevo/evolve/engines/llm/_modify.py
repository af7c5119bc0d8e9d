"""The Modifier: an agent with typed tools that edits a draft copy of the task until it realizes the plan.

Tools: list/read/write/delete files (confined to the draft, see Workspace), run a command inside the draft's
container (ContainerShell: podman, no network, never the host), and run the oracle and invalid-test verifiers on
the draft. The draft starts from the parent task, or from the previous attempt's draft when the verifiers sent
feedback, so a retry fixes the last attempt instead of starting over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel, Field

from envevo.errors import TaskError
from envevo.evolve._engine import GenerationContext, Proposal
from envevo.evolve.engines.llm._workspace import Workspace
from envevo.llm import CandidateFailed, ContainerShell, LLMRuntime, RoleFailed, ShellError, load_prompt, render_trace
from envevo.task import Task, load_task, save

#: Runs the container verifiers on a task dir and returns a short report (None: the tool is not offered).
VerifyFn = Callable[[Path, Path], Awaitable[str]]


class ModifierDone(BaseModel):
    summary: str = Field(description="what was changed, file by file, in a few lines")


def _request(proposal: Proposal, feedback: list[str], files: str) -> str:
    plan = {k: v for k, v in proposal.plan.items() if k in ("rationale", "changes", "edits")}
    text = [
        f"Direction: {proposal.direction.value}   Effort: {proposal.effort.value}",
        "", "Current ξ_E:", render_trace(proposal.before),
        "", "Target ξ′:", render_trace(proposal.after),
        "", f"Plan summary: {proposal.summary}", json.dumps(plan, indent=2, ensure_ascii=False),
    ]
    if feedback:
        text += ["", "The verifiers rejected the previous attempt (the workspace holds it); fix these first:",
                 *[f"- {f}" for f in feedback[-12:]]]
    text += ["", "Files in the workspace:", files, "", "Make the changes with your tools, then answer with a summary."]
    return "\n".join(text)


def _next_draft(workdir: Path) -> tuple[Path, Path | None]:
    """draft-<n+1>, and the latest draft-<n> if any (the trials dirs beside them do not count)."""
    drafts = sorted((int(m.group(1)), p) for p in workdir.glob("draft-*")
                    if p.is_dir() and (m := re.fullmatch(r"draft-(\d+)", p.name)))
    n = drafts[-1][0] + 1 if drafts else 1
    return workdir / f"draft-{n}", (drafts[-1][1] if drafts else None)


def start_draft(task: Task, ctx: GenerationContext, feedback: list[str]) -> Path:
    draft, previous = _next_draft(ctx.workdir)
    base = task
    if feedback and previous is not None:
        try:
            base = load_task(previous)
        except TaskError:
            base = task  # the previous attempt left something unloadable: start over from the parent
    save(base, draft, overwrite=True)
    return draft


async def modify(runtime: LLMRuntime, task: Task, proposal: Proposal, feedback: list[str], ctx: GenerationContext, *,
                 shell: ContainerShell | None, verify: VerifyFn | None) -> tuple[Task, Workspace]:
    """The edited draft as a Task (its own files only; the engine adds metadata)."""
    draft = start_draft(task, ctx, feedback)
    ws = Workspace(draft)
    prompt = load_prompt("modifier")
    agent = runtime.agent("modifier", ModifierDone, prompt.instructions, tool_retries=3)

    @agent.tool_plain
    def list_files(directory: str = "") -> str:
        """List the files of the task (or of one directory in it) with sizes."""
        return ws.list(directory)

    @agent.tool_plain
    def read_file(path: str, offset: int = 0) -> str:
        """Read a text file of the task, from character `offset` on (long files come in chunks)."""
        return ws.read(path, offset)

    @agent.tool_plain
    def write_file(path: str, content: str, executable: bool | None = None) -> str:
        """Create or replace a file of the task with `content`. Scripts (*.sh) are made executable."""
        return ws.write(path, content, executable)

    @agent.tool_plain
    def delete_file(path: str) -> str:
        """Delete a file or directory of the task."""
        return ws.delete(path)

    if shell is not None:
        @agent.tool_plain
        async def run_in_container(command: str, timeout_sec: int = 120, mount_solution: bool = False,
                                   mount_tests: bool = False) -> str:
            """Run a bash command inside the task's container, built from the workspace's environment/
            (no network). Set mount_solution / mount_tests to see solution/ at /solution and tests/ at /tests,
            e.g. to run the reference solution and print what it produces."""
            try:
                result = await shell.run(draft, command, timeout_sec=timeout_sec, docker_image=task.docker_image,
                                         mount_solution=mount_solution, mount_tests=mount_tests)
            except ShellError as e:
                return f"error: {e}"
            return result.summary()

    if verify is not None:
        @agent.tool_plain
        async def run_verifiers() -> str:
            """Run the oracle (reference solution must pass) and invalid-test (doing nothing must fail)
            verifiers on the workspace in containers. Slow (a minute or more): run it once you think you are done."""
            return await verify(draft, ctx.workdir / f"{draft.name}-trials")

    try:
        await runtime.run(agent, _request(proposal, feedback, ws.list()), role="modifier", lineage=ctx.lineage,
                          generation=ctx.generation, request_limit=runtime.settings.modifier_requests)
    except RoleFailed as e:
        raise CandidateFailed(f"the Modifier did not finish: {e}") from e
    try:
        edited = load_task(draft)
    except TaskError as e:
        raise CandidateFailed(f"the Modifier left an invalid task: {e}") from e
    candidate = task.model_copy(deep=True)  # keep the parent's identity (name, source); take the draft's content
    candidate.files = edited.files
    candidate.config, candidate.config_text = edited.config, edited.config_text
    return candidate, ws
