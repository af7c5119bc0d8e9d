"""Settings of an evolution run; stored with the run so `--resume` continues with the same ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from envevo.runtime import DEFAULT_ENGINE
from envevo.trace import DEFAULT_MAX_DRIFT, Direction, Effort

if TYPE_CHECKING:
    from envevo.task import Task
    from envevo.verify import VerificationConfig


class EvolveConfig(BaseModel):
    engine: str = "procedural"
    generations: int = Field(15, ge=1, description="generations per lineage (the paper evolves 15)")
    effort: Effort = Effort.HIGH
    directions: list[Direction] = Field(default_factory=lambda: list(Direction),
                                        description="directions tried each generation, shuffled (one alone isolates a lever)")
    seed: int = Field(0, description="the run's random seed: direction order and every engine choice derive from it")
    plan_budget: int = Field(3, ge=1, description="Proposer→Reviewer rounds per direction")
    env_budget: int = Field(3, ge=1, description="Modifier→verifiers rounds per accepted plan")
    env: str = DEFAULT_ENGINE
    repeats: int = Field(2, ge=1, description="oracle runs per candidate")
    red_team: str = Field("on", description="exploit agents on every candidate: on, off, or sample:N")
    harden: bool = Field(True, description="a seed that only the red team failed is hardened (docs/trust.md#harden) "
                                           "and evolves from its proved hardened copy; False: it is rejected")
    mutation: str = Field("sample:4", description="near-miss solutions (a step's wrong variant or omission; solve.sh "
                                                  "cut short) that must all score 0: on, off, sample:N per candidate, "
                                                  "or strict (every mutant, and a seed whose tests miss one is "
                                                  "rejected, not accepted as weak)")
    model_mutants: int = Field(0, ge=0, description="near misses the run's model writes per candidate for the mutation "
                                                    "verifier, beside the generated ones (an engine with a model); 0: none")
    max_drift: float | None = Field(DEFAULT_MAX_DRIFT, ge=0, le=2,
                                    description="reject a candidate whose instruction drifted more than this from the "
                                                "seed (1 − cosine similarity, docs/drift.md); None: no bound")
    trial_concurrency: int = Field(3, ge=1, description="trials running at once across all lineages")
    image_map: dict[str, str] = Field(default_factory=dict, description="base images rewritten FROM -> TO in the "
                                      "copies trials run (--image-map, [images] of envevo.toml); stored tasks keep "
                                      "their own")
    lineage_concurrency: int = Field(1, ge=1, description="lineages evolving at once")
    models: dict[str, str] = Field(default_factory=dict, description="LLM engine: role -> provider:name")
    weakness_target: dict[str, Any] | None = Field(
        None, description="--target-weakness: the agent's δ_θ tables the procedural engine steers by, as estimated "
                          "when the run started, so a resume goes on toward the same weakness")

    def resumable_with(self, other: EvolveConfig) -> list[str]:
        """Settings that must match for a resumed run to continue the same lineages."""
        keys = ("engine", "effort", "seed", "models", "directions")
        clash = [f"{k}: stored {getattr(self, k)!r}, given {getattr(other, k)!r}" for k in keys if getattr(self, k) != getattr(other, k)]
        if self.target_label() != other.target_label():
            clash.append(f"--target-weakness: stored {self.target_label()}, given {other.target_label()}")
        return clash

    def target_label(self) -> str:
        """Whose weakness, from which run: what a resume must repeat (the δ tables themselves stay as stored, even
        if that run has gained rollouts since)."""
        t = self.weakness_target
        return "untargeted" if t is None else f"{t.get('agent')} from {t.get('source')}"

    def verification(self) -> VerificationConfig:
        """The run's verification settings as the model every command shares (stored runs keep the flat fields)."""
        from envevo.verify import VerificationConfig

        return VerificationConfig(repeats=self.repeats, red_team=self.red_team, mutation=self.mutation,
                                  model_mutants=self.model_mutants)

    def runnable(self, task: Task) -> Task:
        """`task` as its trials run it: the base images of `image_map` rewritten (the stored task keeps its own)."""
        from envevo.task import ImageMap, rewrite_images

        return rewrite_images(task, ImageMap(images=self.image_map)) if self.image_map else task

    @property
    def strict_mutation(self) -> bool:
        """`--mutation strict`: a seed whose tests miss a near miss is rejected, not accepted as weak (envevo's own
        candidates are judged strictly whatever this says)."""
        from envevo.verify import mutation_strict

        return mutation_strict(self.mutation)
