"""The text-action Modifier: the Modifier for servers without tool calling (`[llm.roles.modifier] actions = "text"`).

The model answers in plain text and acts through fenced blocks whose first word names the action (the prompt's
"Text actions" section): ```bash (a command in the candidate's sandbox), ```write PATH, ```edit PATH (an
old/new replacement), ```read PATH, ```list, ```delete PATH, ```run_tests and ```done (the summary). Each
reply's actions run in order, as the tool Modifier's sequential tools do, through the same Workspace and the same
ShellSession, and their results go back as the next user message. Old results are trimmed like the tool
Modifier's (`_history`). The loop ends at ```done, or fails the candidate when the request budget runs out.
A reply the output cap cut is said to be cut (its unfinished block did not run), and the failure counts the cuts
and names the setting to raise; a failed request is told like every role's (envevo/llm/_reasons.py).

Requests go through the role's guarded model (retries, endpoint gate, metering and budgets), one per turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelRequest, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from envevo.evolve._engine import GenerationContext
from envevo.evolve.engines.llm._history import trim_history
from envevo.evolve.engines.llm._modifier_prompt import instructions
from envevo.evolve.engines.llm._sandbox import ShellError, ShellSession
from envevo.evolve.engines.llm._workspace import Workspace
from envevo.llm import CandidateFailed, LLMRuntime, cut_replies, role_failure

# A fence of three or more backticks, the action and its argument, the body, and the same fence closing it.
_BLOCK = re.compile(r"^(?P<fence>`{3,})[ \t]*(?P<action>[A-Za-z_]+)[ \t]*(?P<arg>[^\n`]*?)[ \t]*\n"
                    r"(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
_EDIT = re.compile(r"^<{7} ?old[ \t]*\n(?P<old>.*?)^={7}[ \t]*\n(?P<new>.*?)^>{7} ?new[ \t]*$", re.M | re.S)
ACTIONS = ("bash", "sh", "write", "edit", "read", "list", "delete", "run_tests", "done")
_NO_ACTION = ("No action found in your reply. Act with fenced blocks: ```bash, ```write PATH, ```edit PATH, "
              "```read PATH, ```list, ```delete PATH, ```run_tests, or ```done with your summary.")
_CUT = ("Your reply was cut at the output cap ({cap} tokens): the block it was writing did not run. Send shorter "
        "replies: fewer actions each, less text before them, a long file in smaller edits.")


@dataclass(frozen=True)
class Action:
    name: str
    arg: str
    body: str


def parse_actions(text: str) -> list[Action]:
    """The reply's action blocks, in order; blocks in other languages (```python …) are not actions."""
    out = []
    for m in _BLOCK.finditer(text):
        name = m.group("action").lower()
        if name in ACTIONS:
            out.append(Action("bash" if name == "sh" else name, m.group("arg").strip(), m.group("body")))
    return out


async def _perform(a: Action, ws: Workspace, sandbox: ShellSession | None) -> str:
    if a.name == "write":
        return ws.write(a.arg, a.body)
    if a.name == "edit":
        m = _EDIT.search(a.body)
        if m is None:
            return "error: an edit block holds <<<<<<< old, the old text, =======, the new text, then >>>>>>> new"
        return ws.replace(a.arg, m.group("old"), m.group("new"))
    if a.name == "read":
        return ws.read(a.arg)
    if a.name == "list":
        return ws.list(a.arg)
    if a.name == "delete":
        return ws.delete(a.arg)
    if sandbox is None:
        return "error: there is no shell in this run; read the files instead"
    try:
        if a.name == "run_tests":
            return await sandbox.run_tests(with_solution=a.body.strip().lower() != "nop")
        result = await sandbox.run(a.body, upload_solution=True, upload_tests=True)
    except ShellError as e:
        return f"error: the container could not be started: {e}"
    return result.summary()


async def run_text_modifier(runtime: LLMRuntime, ws: Workspace, request: str, ctx: GenerationContext,
                            sandbox: ShellSession | None) -> str:
    """Drive the model through text actions until ```done; returns its summary. CandidateFailed otherwise."""
    budget = runtime.settings.modifier_requests
    system = instructions(sandbox.facts() if sandbox is not None else None, requests=budget, text_actions=True)
    model = runtime.model("modifier")
    settings = runtime.model_settings("modifier")
    params = ModelRequestParameters(allow_text_output=True)
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(request)], instructions=system)]
    cap, cuts = int(settings.get("max_tokens") or 0), 0
    with runtime.meter.scope("modifier", ctx.lineage, ctx.generation):
        for _ in range(budget):
            sent = trim_history(messages, observations_as_prompts=True)
            try:
                response = await model_request(model, sent, model_settings=settings, model_request_parameters=params)
            except (ModelAPIError, UnexpectedModelBehavior) as e:  # told in envevo's settings, as the tool Modifier's
                raise CandidateFailed(f"the Modifier did not finish: {role_failure(e, 'modifier')}") from e
            messages.append(response)
            reply = "".join(p.content for p in response.parts if isinstance(p, TextPart))
            results = []
            for action in parse_actions(reply):
                if action.name == "done":
                    return action.body.strip() or "done"
                results.append(f"### {action.name} {action.arg}".rstrip() + "\n" + await _perform(action, ws, sandbox))
            if response.finish_reason == "length":  # not "no action": the block it was writing never closed
                cuts += 1
                results.append(_CUT.format(cap=cap))
            messages.append(ModelRequest(parts=[UserPromptPart("\n\n".join(results) or _NO_ACTION)], instructions=system))
    why = f"it used its {budget} requests without a ```done block"
    raise CandidateFailed(f"the Modifier did not finish: {why}" + (f"; {cut_replies('modifier', cuts, cap)}" if cuts else ""))
