"""Chains: ordered (scenario, skill, seed) steps that type-check as a dependency pipeline.

A chain is ξ made concrete: its steps are exactly the pairs (σ_{t−1}, κ_t), so every evolution direction is
an exact edit of `steps`, and D_T is exact. Each step keeps its own seed, so unrelated edits leave a
step's draw alone; new steps get seeds derived from the chain seed.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, computed_field

from envevo.catalog._graph import SCENARIOS, SKILLS, compatible
from envevo.catalog._kinds import Kind
from envevo.trace import Step, Trace


class Pin(BaseModel):
    """The draw that first made a step's fixtures: its skill, seed and inputs, enough to redo it alone.

    An edit that keeps a scenario (a skill swap, or a step whose input changed upstream) pins the step to its
    fixtures: the step is rebuilt on that draw's scenario instance, byte for byte, and only the question asked of
    it (instruction section, oracle lines, checks) is drawn anew.
    """

    model_config = ConfigDict(frozen=True)

    skill: str
    seed: int
    index: int
    in_kind: Kind
    in_path: str | None = None
    in_keys: tuple[str, ...] | None = None
    final: bool


class ChainStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    scenario: str
    skill: str
    seed: int
    pin: Pin | None = None  # None: the step draws its own fixtures


class Chain(BaseModel):
    model_config = ConfigDict(frozen=True)

    goal: str
    category: str
    seed: int
    steps: tuple[ChainStep, ...]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def final(self) -> str:
        """σL: where the checked artifact lands (the kind of report the last step writes)."""
        if not self.steps or self.steps[-1].skill not in SKILLS:
            return "report"
        return f"report:{SKILLS[self.steps[-1].skill].out.value}"

    @property
    def L(self) -> int:  # noqa: N802 - the paper's name
        return len(self.steps)

    def pairs(self) -> list[tuple[str, str]]:
        return [(s.scenario, s.skill) for s in self.steps]

    def trace(self) -> Trace:
        return Trace(goal=self.goal, steps=tuple(Step(scenario=s.scenario, skill=s.skill) for s in self.steps), final=self.final)

    def with_steps(self, steps) -> Chain:
        return self.model_copy(update={"steps": tuple(steps)})

    def digest(self) -> str:
        # exclude_none: a chain without pins hashes as it did before pins existed
        return hashlib.sha256(self.model_dump_json(exclude_none=True).encode()).hexdigest()


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from any parts (never Python's salted hash)."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "big") & 0x7FFFFFFF


def in_kinds(chain: Chain) -> list[Kind]:
    kinds, prev = [], Kind.NONE
    for s in chain.steps:
        kinds.append(prev)
        prev = SKILLS[s.skill].out if s.skill in SKILLS else Kind.NONE
    return kinds


def fits_at(pairs: list[tuple[str, str]], i: int) -> bool:
    """Whether pair i type-checks against its neighbours (reads what i−1 writes; i+1 can read what i writes)."""
    sc, sk = pairs[i]
    if not compatible(sc, sk):
        return False
    skill = SKILLS[sk]
    prev = Kind.NONE if i == 0 else SKILLS[pairs[i - 1][1]].out
    if prev not in skill.accepts:
        return False
    if i + 1 < len(pairs) and skill.out not in SKILLS[pairs[i + 1][1]].accepts:
        return False
    return True


class ChainProblemKind(StrEnum):
    """Why a chain is not a valid dependency pipeline."""

    EMPTY = "empty"
    UNKNOWN_SCENARIO = "unknown_scenario"
    UNKNOWN_SKILL = "unknown_skill"
    INCOMPATIBLE = "incompatible"  # the skill does not apply to the scenario
    ILL_TYPED = "ill_typed"  # the step cannot read what the previous one writes
    SCENARIO_TWICE = "scenario_twice"
    DUPLICATE_STEP = "duplicate_step"


class ChainProblem(BaseModel):
    """One problem of a chain: its kind, and the message shown to users and the Modifier (its str)."""

    model_config = ConfigDict(frozen=True)

    kind: ChainProblemKind
    message: str

    def __str__(self) -> str:
        return self.message


def _step_problem(i: int, sc: str, sk: str) -> ChainProblem | None:
    """Step i's pair: known, and compatible."""
    if sc not in SCENARIOS:
        return ChainProblem(kind=ChainProblemKind.UNKNOWN_SCENARIO, message=f"step {i + 1}: unknown scenario {sc!r}")
    if sk not in SKILLS:
        return ChainProblem(kind=ChainProblemKind.UNKNOWN_SKILL, message=f"step {i + 1}: unknown skill {sk!r}")
    if not compatible(sc, sk):
        return ChainProblem(kind=ChainProblemKind.INCOMPATIBLE,
                            message=f"step {i + 1}: skill {sk} does not apply to scenario {sc}")
    return None


def pairs_problems(pairs: list[tuple[str, str]]) -> list[ChainProblem]:
    """Why these (scenario, skill) steps are not a valid dependency pipeline; empty when they are."""
    if not pairs:
        return [ChainProblem(kind=ChainProblemKind.EMPTY, message="a chain needs at least one step")]
    problems = [p for i, (sc, sk) in enumerate(pairs) if (p := _step_problem(i, sc, sk)) is not None]
    if problems:
        return problems
    for i in range(len(pairs)):
        prev = Kind.NONE if i == 0 else SKILLS[pairs[i - 1][1]].out
        if prev not in SKILLS[pairs[i][1]].accepts:
            problems.append(ChainProblem(kind=ChainProblemKind.ILL_TYPED,
                                         message=f"step {i + 1}: {pairs[i][1]} cannot read {prev.value} output"))
    scen = [sc for sc, _ in pairs]
    if len(set(scen)) != len(scen):
        problems.append(ChainProblem(kind=ChainProblemKind.SCENARIO_TWICE,
                                     message="a scenario appears twice (each step works in its own place)"))
    if len(set(pairs)) != len(pairs):
        problems.append(ChainProblem(kind=ChainProblemKind.DUPLICATE_STEP, message="duplicate step"))
    return problems


def chain_problems(chain: Chain) -> list[ChainProblem]:
    """Why this chain is not a valid dependency pipeline; empty when it is."""
    return pairs_problems(chain.pairs())
