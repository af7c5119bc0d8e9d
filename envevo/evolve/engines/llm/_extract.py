"""The Proposer's first job: extract ξ_E from a task, each pair backed by quotes from its files.

Quotes are checked in code against the named file (whitespace-insensitive); a quote that is not there goes
back to the model as a retry, so ξ_E is anchored in what the task actually asks, solves and tests.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry

from envevo.llm import LLMRuntime, load_prompt, render_task
from envevo.task import Task, component_of
from envevo.trace import Step, Trace

_EVIDENCE_COMPONENTS = ("instruction", "solution", "verification")


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

    def trace(self) -> Trace:
        return Trace(goal=self.goal.strip(), final=(self.final or "").strip() or None,
                     steps=tuple(Step(scenario=s.scenario.strip(), skill=s.skill.strip()) for s in self.steps))


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def evidence_problems(task: Task, extraction: Extraction) -> list[str]:
    problems = []
    for i, step in enumerate(extraction.steps, 1):
        for ev in step.evidence:
            path = ev.file.strip().removeprefix("./")
            if component_of(path) not in _EVIDENCE_COMPONENTS or path not in task.files:
                problems.append(f"pair {i}: {ev.file!r} is not the instruction, a solution file or a test file of this task")
                continue
            text = task.files[path].text() or ""
            if not ev.quote.strip() or _squash(ev.quote) not in _squash(text):
                problems.append(f"pair {i}: the quote {ev.quote[:80]!r} does not appear in {path}; copy it verbatim")
    return problems


async def extract(runtime: LLMRuntime, task: Task, *, lineage: str | None = None, generation: int | None = None) -> Extraction:
    prompt = load_prompt("proposer-extract")
    agent = runtime.agent("proposer", Extraction, prompt.instructions)

    @agent.output_validator
    def _anchored(out: Extraction) -> Extraction:
        problems = evidence_problems(task, out)
        if problems:
            raise ModelRetry("Fix the evidence: " + "; ".join(problems[:8]))
        return out

    text = f"Extract the scenario–skill trajectory ξ of this task.\n\n{render_task(task)}"
    return await runtime.run(agent, text, role="proposer", lineage=lineage, generation=generation)
