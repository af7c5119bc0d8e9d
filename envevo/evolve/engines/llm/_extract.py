"""The Proposer's first job: extract ξ_E from a task, each pair backed by quotes from its files.

Quotes are checked in code against the task's files, so ξ_E is anchored in what the task actually asks, solves
and tests. The match is tolerant of what models do to a quote without changing it: whitespace and line breaks,
typographic quotes and dashes, Markdown backticks, surrounding quotation marks, an elided middle ("…" or "..."),
and a quote attributed to the wrong evidence file (it is found in the file that has it). A quote found nowhere
goes back to the model as a retry; extraction gets more retries than other roles (EXTRACT_RETRIES), since a seed
whose extraction fails starts no lineage.

A candidate is re-extracted the same way, with the ξ′ its plan targeted as the preferred wording, so the two can
be compared label for label: labels the model repeats with cosmetic differences are snapped back to ξ′'s.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry

from envevo.llm import LLMRuntime, load_prompt, render_task, render_trace
from envevo.task import Task, component_of
from envevo.trace import Step, Trace

_EVIDENCE_COMPONENTS = ("instruction", "solution", "verification")
#: Re-asks after evidence that is not in the files (the settings' output_retries apply to the other roles).
EXTRACT_RETRIES = 5
_ELISION = re.compile(r"\s*(?:\.\.\.|…|\[\.\.\.\])\s*")
_TYPOGRAPHIC = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "\u00a0": " "})


class Evidence(BaseModel):
    file: str = Field(description="instruction.md, solution/solve.sh or a file under tests/")
    quote: str = Field(description="copied verbatim from that file")


class ExtractedStep(BaseModel):
    scenario: str = Field(description="σ_{t-1}: where the agent is")
    skill: str = Field(description="κ_t: what it applies there")
    evidence: list[Evidence] = Field(min_length=1)


class Extraction(BaseModel):
    goal: str
    steps: list[ExtractedStep] = Field(min_length=1)
    final: str | None = Field(None, description="σ_L: where the checked artifact lands")

    def trace(self, prefer: Trace | None = None) -> Trace:
        """ξ; with `prefer`, labels equal to one of its labels up to case, spacing or a final period take its spelling."""
        scenarios = {_label(s.scenario): s.scenario for s in prefer.steps} if prefer else {}
        skills = {_label(s.skill): s.skill for s in prefer.steps} if prefer else {}
        steps = tuple(Step(scenario=scenarios.get(_label(s.scenario), s.scenario.strip()),
                           skill=skills.get(_label(s.skill), s.skill.strip())) for s in self.steps)
        final = (self.final or "").strip() or None
        if prefer is not None and final is not None and prefer.final and _label(final) == _label(prefer.final):
            final = prefer.final
        return Trace(goal=self.goal.strip(), final=final, steps=steps)


def _label(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(".").casefold()


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.translate(_TYPOGRAPHIC).replace("`", "")).strip()


def quote_in(quote: str, text: str) -> bool:
    """Whether `quote` appears in `text`, up to whitespace, typography, backticks, outer quotation marks and elisions."""
    q = _squash(quote).strip("\"' ")
    haystack = _squash(text)
    fragments = [f for f in (_squash(p).strip("\"' ") for p in _ELISION.split(q)) if f]
    if not fragments:
        return False
    at = 0
    for fragment in fragments:  # every fragment, in order
        at = haystack.find(fragment, at)
        if at < 0:
            return False
        at += len(fragment)
    return True


def _evidence_files(task: Task) -> dict[str, str]:
    return {p: (f.text() or "") for p, f in task.files.items() if component_of(p) in _EVIDENCE_COMPONENTS}


def evidence_problems(task: Task, extraction: Extraction) -> list[str]:
    files = _evidence_files(task)
    problems = []
    for i, step in enumerate(extraction.steps, 1):
        for ev in step.evidence:
            path = ev.file.strip().strip("`").removeprefix("./").removeprefix("/")
            if path in task.files and path not in files:
                problems.append(f"pair {i}: {ev.file!r} is not the instruction, a solution file or a test file of this task")
            elif not ev.quote.strip():
                problems.append(f"pair {i}: an empty quote from {ev.file!r}; quote the line that shows this step")
            elif path in files and quote_in(ev.quote, files[path]):
                continue
            elif any(quote_in(ev.quote, text) for text in files.values()):
                continue  # the right words, attributed to another (or no real) evidence file: still evidence
            else:
                where = path if path in files else "instruction.md, solution/ or tests/"
                problems.append(f"pair {i}: the quote {ev.quote[:80]!r} does not appear in {where}; copy it verbatim")
    return problems


def _request(task: Task, prefer: Trace | None) -> str:
    text = "Extract the scenario–skill trajectory ξ of this task."
    if prefer is not None:
        text += ("\n\nThis task was written to realize the trajectory below. Use its labels, word for word, for the "
                 "steps this task really has, and only for those: every pair still needs a quote from the files. Leave "
                 "out a step the files do not ask for, solve and test, and add a step they do that is not listed.\n"
                 + render_trace(prefer))
    return f"{text}\n\n{render_task(task)}"


async def extract(runtime: LLMRuntime, task: Task, *, lineage: str | None = None, generation: int | None = None,
                  prefer: Trace | None = None) -> Extraction:
    prompt = load_prompt("proposer-extract")
    agent = runtime.agent("proposer", Extraction, prompt.instructions)

    @agent.output_validator
    def _anchored(out: Extraction) -> Extraction:
        problems = evidence_problems(task, out)
        if problems:
            raise ModelRetry("Fix the evidence: " + "; ".join(problems[:8]))
        return out

    retries = max(EXTRACT_RETRIES, runtime.settings.output_retries)
    with agent.override(retries={"output": retries}):
        return await runtime.run(agent, _request(task, prefer), role="proposer", lineage=lineage, generation=generation)
