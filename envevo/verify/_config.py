"""What verifies a task: one model that `verify`, `audit`, `seeds select`, `harden` and `evolve` share, so a task meets
the same checks whichever command judges it, and the library's defaults are the CLI's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envevo.verify._plugins import registered

if TYPE_CHECKING:
    from envevo.verify._mutation import MutantWriter
    from envevo.verify._verifiers import TrialVerifier


class VerificationConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repeats: int = Field(2, ge=1, description="oracle runs per task; all must reach reward 1.0")
    red_team: str = Field("on", description="exploit agents on every task: on, off, or sample:N")
    mutation: str = Field("sample:4", description="near-miss solutions (a step's wrong variant or omission; solve.sh "
                                                  "cut short) that must all score 0: on, off, sample:N per task, or "
                                                  "strict (every mutant, and a task whose tests miss one fails, not "
                                                  "weak)")
    model_mutants: int = Field(0, ge=0, description="near misses the model writes per task beside the generated "
                                                    "ones; 0: none")
    probes: bool = Field(True, description="the red team's false-fail probes (the reference answer reformatted)")
    learn_rubric: Path | None = Field(None, description="a rubric TOML each hack the LLM red team proves is appended "
                                                        "to as a required criterion")

    @model_validator(mode="before")
    @classmethod
    def _switches(cls, data: object) -> object:
        """Each registered verifier's switch, checked (a ValueError naming its option and the accepted values) and
        spelt one way."""
        if isinstance(data, dict):
            data = dict(data)
            for spec in registered():
                if spec.option is not None and isinstance(data.get(spec.option), str):
                    spec.parse(data[spec.option])
                    data[spec.option] = data[spec.option].strip().lower()
        return data

    @property
    def strict(self) -> bool:
        """`mutation = strict`: a task whose tests miss a near miss fails instead of being weak."""
        return any(spec.strict(self) for spec in registered())

    def verifiers(self, *, model: object | None = None, mutant_writer: MutantWriter | None = None
                  ) -> list[TrialVerifier]:
        """The container verifiers this config asks for; `model` lends the red team its LLM hacker and
        `mutant_writer` writes `model_mutants` near misses per task."""
        return [v for spec in registered() if (v := spec.build(self, model=model, mutant_writer=mutant_writer))]
