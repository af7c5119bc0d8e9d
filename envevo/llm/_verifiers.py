"""The container verifiers of a run or command, with its model where they use one: the red team's LLM hacker and the
mutation verifier's writer of near misses (`written` per task, opt-in: each costs a model call)."""

from __future__ import annotations

from pathlib import Path

from envevo.llm._mutant_writer import ModelMutantWriter
from envevo.llm._runtime import LLMRuntime
from envevo.verify import TrialVerifier, default_verifiers


def verifiers_with_model(repeats: int, *, red_team: str, mutation: str, runtime: LLMRuntime | None,
                         learn_rubric: Path | None = None, written: int = 0, probes: bool = True) -> list[TrialVerifier]:
    """`default_verifiers`, with `runtime` lent to the hacker (metered, recorded and budgeted with the run's other
    calls) and, when `written` > 0, a writer of that many model-written near misses per task."""
    writer = ModelMutantWriter(runtime) if runtime is not None and written else None
    return default_verifiers(repeats, red_team=red_team, mutation=mutation, model=runtime, learn_rubric=learn_rubric,
                             mutant_writer=writer, written=written, probes=probes)
