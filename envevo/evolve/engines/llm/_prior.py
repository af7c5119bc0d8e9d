"""p_T for free-text labels written by a model: a smoothed uniform over a vocabulary of familiar terms.

A model names scenarios and skills in its own words, so there is no catalog to count. This prior is the
simplest honest stand-in until corpus- or model-based estimators exist:

- A label is *familiar* when it contains a term from the shipped vocabulary (envevo/llm/prompts/vocab_*.txt:
  CSV, nginx, SQLite, grep, join, …), matched as whole words, case-insensitively.
- Familiar labels share probability mass 1 − ε uniformly over the V vocabulary terms:
  p = (1 − ε) / V.
- Every other label is *novel* and gets a share of ε spread over an open vocabulary of N_OPEN labels:
  p = ε / N_OPEN.

The goal g is ignored (p(σ | g) = p(σ), p(κ | σ, g) = p(κ)). So D_T counts L exactly (the length lever) and
moves with scenario and skill edits only when a label crosses between familiar and novel: a coarse signal,
reported under the estimator name "llm-label-uniform-v1" so it is never mistaken for a calibrated one.
"""

from __future__ import annotations

import math
import re
from functools import cache
from importlib import resources

EPSILON = 0.1
N_OPEN = 10_000
_WORD = re.compile(r"[a-z0-9][a-z0-9+#.\-]*")


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower().replace("_", " ")))


@cache
def vocabulary(kind: str) -> tuple[tuple[str, ...], ...]:
    text = resources.files("envevo.llm.prompts").joinpath(f"vocab_{kind}.txt").read_text(encoding="utf-8")
    return tuple(_tokens(line) for line in text.splitlines() if line.strip() and not line.startswith("#"))


def familiar(label: str, kind: str) -> bool:
    words = _tokens(label)
    for term in vocabulary(kind):
        n = len(term)
        if any(words[i:i + n] == term for i in range(len(words) - n + 1)):
            return True
    return False


class LabelPrior:
    """ReferenceDistribution over model-written labels (natural log)."""

    name = "llm-label-uniform-v1"

    def _neg_log_p(self, label: str, kind: str) -> float:
        if familiar(label, kind):
            return math.log(len(vocabulary(kind)) / (1 - EPSILON))
        return math.log(N_OPEN / EPSILON)

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float:
        return self._neg_log_p(scenario, "scenarios")

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float:
        return self._neg_log_p(skill, "skills")
