"""The Modifier: an agent with typed tools that edits a draft copy of the task until it realizes the plan.

Tools: list/read/write/edit/delete files (confined to the draft, see Workspace), run a command in the draft's own
sandbox (a ShellSession: the verification environment's container for this candidate, state kept between
commands, never the host), run solve.sh then test.sh there (`run_tests`, answering with the verifiers' failure
digest), and run the oracle and invalid-test verifiers on the draft. Edits, commands and runs are barriers
(pydantic-ai `sequential` tools): in one turn they run in the order the model emitted them, so a command always
sees the writes before it. Old observations are trimmed from the history (`_history`). A server without tool
calling gets the same abilities as text actions (`[llm.roles.modifier] actions = "text"`, `_text_actions`).
The sandbox is opened at the first command and closed when the Modifier's run ends, also on errors and
cancellation. The draft starts from the parent task, or from the previous attempt's draft when the verifiers sent
feedback, so a retry fixes the last attempt instead of starting over.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_ai.capabilities import ProcessHistory

from envevo.errors import TaskError
from envevo.evolve._engine import GenerationContext, Proposal
from envevo.evolve.engines.llm._history import trim_history
from envevo.evolve.engines.llm._modifier_prompt import instructions
from envevo.evolve.engines.llm._sandbox import ContainerShell, ShellError, ShellSession
from envevo.evolve.engines.llm._text_actions import run_text_modifier
from envevo.evolve.engines.llm._workspace import Workspace
from envevo.llm import (
    CandidateFailed,
    LLMRuntime,
    RoleFailed,
    render_trace,
)
from envevo.task import Task, load_task, save

#: Runs the container verifiers on a task dir and returns a short report (None: the tool is not offered).
VerifyFn = Callable[[Path, Path], Awaitable[str]]


class ModifierDone(BaseModel):
    summary: str = Field(description="what was changed, file by file, in a few lines")


def request_text(proposal: Proposal, feedback: list[str], files: str) -> str:
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
    text += ["", "Files in the workspace:", files, "", "Make the changes, then answer with a summary."]
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


def actions_mode(runtime: LLMRuntime) -> str:
    """`[llm.roles.modifier] actions`: "tools" (tool calls, the default) or "text" (fenced blocks, `_text_actions`)."""
    return str(getattr(runtime.settings.role("modifier"), "actions", None) or "tools")


async def _run_modifier(runtime: LLMRuntime, draft: Path, ws: Workspace, proposal: Proposal, feedback: list[str],
                        ctx: GenerationContext, sandbox: ShellSession | None, verify: VerifyFn | None) -> None:
    budget = runtime.settings.modifier_requests
    text = instructions(sandbox.facts() if sandbox is not None else None, requests=budget)
    agent = runtime.agent("modifier", ModifierDone, text, tool_retries=3, capabilities=[ProcessHistory(trim_history)])

    @agent.tool_plain
    def list_files(directory: str = "") -> str:
        """List the files of the task (or of one directory in it) with sizes."""
        return ws.list(directory)

    @agent.tool_plain
    def read_file(path: str, offset: int = 0) -> str:
        """Read a text file of the task, from character `offset` on (long files come in chunks)."""
        return ws.read(path, offset)

    # Edits, commands and verifier runs are barriers: in one turn they run in the order they were called.
    @agent.tool_plain(sequential=True)
    def write_file(path: str, content: str, executable: bool | None = None) -> str:
        """Create or replace a file of the task with `content`. Scripts (*.sh) are made executable."""
        return ws.write(path, content, executable)

    @agent.tool_plain(sequential=True)
    def str_replace(path: str, old_text: str, new_text: str) -> str:
        """Replace the one occurrence of `old_text` (copied exactly, unique in the file) with `new_text`.
        Cheaper than write_file for a change to part of a file."""
        return ws.replace(path, old_text, new_text)

    @agent.tool_plain(sequential=True)
    def delete_file(path: str) -> str:
        """Delete a file or directory of the task."""
        return ws.delete(path)

    if sandbox is not None:
        @agent.tool_plain(sequential=True)
        async def run_in_container(command: str, timeout_sec: int = 120, mount_solution: bool = False,
                                   mount_tests: bool = False) -> str:
            """Run a bash command in this candidate's own container (the verifier trials' image and network
            policy). State persists between commands; commands run one at a time, after the edits called before
            them. Set mount_solution / mount_tests to copy the workspace's current solution/ to /solution and
            tests/ to /tests first (a fresh copy, replacing the last)."""
            try:
                result = await sandbox.run(command, timeout_sec=timeout_sec, upload_solution=mount_solution,
                                           upload_tests=mount_tests)
            except ShellError as e:
                return f"error: the container could not be started: {e}"
            return result.summary()

        @agent.tool_plain(sequential=True)
        async def run_tests(with_solution: bool = True) -> str:
            """Run solve.sh then test.sh as the oracle trial does, in a fresh container from the image (the session
            continues there), and report the reward, the failing tests, solve.sh's output and the end of
            test-stdout. with_solution=false runs the tests on the untouched environment: they must score 0."""
            try:
                return await sandbox.run_tests(with_solution=with_solution)
            except ShellError as e:
                return f"error: the container could not be started: {e}"

    if verify is not None:
        @agent.tool_plain(sequential=True)
        async def run_verifiers() -> str:
            """Run the oracle (reference solution must pass) and invalid-test (doing nothing must fail)
            verifiers on the workspace in containers. Slow (a minute or more): run it once you think you are done."""
            return await verify(draft, ctx.workdir / f"{draft.name}-trials")

    try:
        await runtime.run(agent, request_text(proposal, feedback, ws.list()), role="modifier", lineage=ctx.lineage,
                          generation=ctx.generation, request_limit=budget)
    except RoleFailed as e:
        raise CandidateFailed(f"the Modifier did not finish: {e.reason}") from e


async def modify(runtime: LLMRuntime, task: Task, proposal: Proposal, feedback: list[str], ctx: GenerationContext, *,
                 shell: ContainerShell | None, verify: VerifyFn | None) -> tuple[Task, Workspace]:
    """The edited draft as a Task (its own files only; the engine adds metadata)."""
    draft = start_draft(task, ctx, feedback)
    ws = Workspace(draft)
    # The draft's own sandbox: opened by the first command, closed (stopped, removed) when this run ends.
    async with shell.session(draft) if shell is not None else contextlib.nullcontext() as sandbox:
        if actions_mode(runtime) == "text":
            await run_text_modifier(runtime, ws, request_text(proposal, feedback, ws.list()), ctx, sandbox)
        else:
            await _run_modifier(runtime, draft, ws, proposal, feedback, ctx, sandbox, verify)
    try:
        edited = load_task(draft)
    except TaskError as e:
        raise CandidateFailed(f"the Modifier left an invalid task: {e}") from e
    candidate = task.model_copy(deep=True)  # keep the parent's identity (name, source); take the draft's content
    candidate.files = edited.files
    candidate.config, candidate.config_text = edited.config, edited.config_text
    return candidate, ws
