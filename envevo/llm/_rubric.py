"""Rubrics as TOML: weighted criteria, each judged reason-first as pass, fail or n/a.

    name = "plan"
    version = "1"
    threshold = 1.0          # weighted share of applicable criteria that must pass

    [[criteria]]
    name = "realizes_direction"
    weight = 2.0
    required = true          # a fail rejects whatever the score
    description = "…"

Two defaults ship with envevo (envevo/llm/prompts/{plan,task}_rubric.toml). The task rubric names Harbor's
default rubric as its base (`base = "harbor"`): Harbor's criteria, with their guidance, come first, then envevo's
evolution criteria, and `critical` marks which of them reject on their own. User files add criteria; one with a
default's name replaces it. `envevo rubric learn` appends confirmed criteria to a project's file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tomllib
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Literal, Protocol

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_ai import Agent, ModelRetry

from envevo.llm._errors import LLMConfigError

Verdict = Literal["pass", "fail", "n/a"]


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    description: str
    guidance: str = ""  # how to decide pass or fail (Harbor's rubric carries one per criterion)
    weight: float = Field(1.0, gt=0)
    required: bool = False  # critical: a fail rejects whatever the score
    evolution: bool = False  # judged only on an evolved candidate, against its parent, its plan and its diff


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "rubric"
    version: str = "1"
    threshold: float = Field(1.0, ge=0, le=1)
    base: Literal["harbor"] | None = None  # criteria loaded first, from Harbor's packaged default rubric
    critical: list[str] = Field(default_factory=list)  # names made `required`, base criteria included
    weights: dict[str, float] = Field(default_factory=dict)  # weights of named criteria, base criteria included
    criteria: list[Criterion]

    def for_seed(self) -> Rubric:
        """Without the evolution criteria: a seed has no parent, plan or diff to judge them on."""
        return self.model_copy(update={"criteria": [c for c in self.criteria if not c.evolution]})

    def merged(self, others: Iterable[Rubric]) -> Rubric:
        by_name = {c.name: c for c in self.criteria}
        versions = [self.version]
        for other in others:
            versions.append(f"{other.name}@{other.version}")
            by_name.update({c.name: c for c in other.criteria})
            for name in other.critical:  # a user file may make a default criterion critical, or reweigh it
                if name in by_name:
                    by_name[name] = by_name[name].model_copy(update={"required": True})
            for name, weight in other.weights.items():
                if name in by_name:
                    by_name[name] = by_name[name].model_copy(update={"weight": weight})
        return self.model_copy(update={"criteria": list(by_name.values()), "version": "+".join(versions)})

    def to_toml(self) -> str:
        return tomli_w.dumps(self.model_dump(mode="json", exclude_none=True))

    def brief(self) -> str:
        """The criteria as the model sees them."""
        lines = []
        for c in self.criteria:
            flags = f"weight {c.weight:g}{', critical' if c.required else ''}"
            lines.append(f"- {c.name} ({flags}): {' '.join(c.description.split())}")
            if c.guidance:
                lines.append(f"  guidance: {' '.join(c.guidance.split())}")
        return "\n".join(lines)


class Judgement(BaseModel):
    """One criterion judged: reason first, then the verdict (so the model argues before it decides)."""

    name: str
    reason: str
    verdict: Verdict


def parse_rubric(text: str, where: str) -> Rubric:
    try:
        return Rubric.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:
        raise LLMConfigError(f"rubric {where} is not valid TOML: {e}") from e
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise LLMConfigError(f"rubric {where}: {loc}: {first['msg']}") from e


#: Harbor's default task rubric, as the installed package ships it (what `harbor check` judges a task by).
HARBOR_RUBRIC = ("cli", "quality_checker", "default-rubric.toml")


def harbor_rubric_path() -> Path:
    """Where the installed Harbor keeps its default rubric; found without importing Harbor (envevo/runtime/ only)."""
    spec = importlib.util.find_spec("harbor")
    if spec is None or not spec.submodule_search_locations:
        raise LLMConfigError("Harbor is not installed, so its default rubric cannot be read; reinstall envevo")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*HARBOR_RUBRIC)
    if not path.is_file():
        raise LLMConfigError(f"the installed Harbor has no default rubric at {path}; install harbor 0.26 or newer")
    return path


def harbor_rubric() -> Rubric:
    path = harbor_rubric_path()
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return parse_rubric(tomli_w.dumps({"name": "harbor", "version": hashlib.sha256(text.encode()).hexdigest()[:8],
                                       "criteria": data.get("criteria", [])}), str(path))


def _with_base(rubric: Rubric) -> Rubric:
    criteria = rubric.criteria
    version = rubric.version
    if rubric.base == "harbor":
        base = harbor_rubric()
        ours = {c.name for c in criteria}
        criteria = [c for c in base.criteria if c.name not in ours] + criteria
        version = f"{version}+harbor@{base.version}"
    names = {c.name for c in criteria}
    for key, given in (("critical", set(rubric.critical)), ("weights", set(rubric.weights))):
        if given - names:
            raise LLMConfigError(f"rubric {rubric.name}: {key} names no criterion: {', '.join(sorted(given - names))}")
    if any(w <= 0 for w in rubric.weights.values()):
        raise LLMConfigError(f"rubric {rubric.name}: weights must be positive")
    critical = set(rubric.critical)
    criteria = [c.model_copy(update={"required": c.required or c.name in critical,
                                     "weight": rubric.weights.get(c.name, c.weight)}) for c in criteria]
    return rubric.model_copy(update={"criteria": criteria, "version": version, "base": None, "critical": [], "weights": {}})


def default_rubric(kind: Literal["plan", "task"]) -> Rubric:
    text = resources.files("envevo.llm.prompts").joinpath(f"{kind}_rubric.toml").read_text(encoding="utf-8")
    return _with_base(parse_rubric(text, f"(default {kind} rubric)"))


def load_rubric(path: str | Path) -> Rubric:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise LLMConfigError(f"cannot read rubric {p}: {e.strerror}; check --rubric") from e
    return parse_rubric(text, str(p))


def check_judgements(rubric: Rubric, judgements: Sequence[Judgement]) -> list[str]:
    """What is wrong with a set of judgements: every criterion exactly once, nothing else."""
    names = [j.name for j in judgements]
    wanted = [c.name for c in rubric.criteria]
    problems = []
    missing = [n for n in wanted if n not in names]
    extra = sorted({n for n in names if n not in wanted})
    dupes = sorted({n for n in names if names.count(n) > 1})
    if missing:
        problems.append(f"judge every criterion; missing: {', '.join(missing)}")
    if extra:
        problems.append(f"judge only the rubric's criteria; unknown: {', '.join(extra)}")
    if dupes:
        problems.append(f"judge each criterion once; repeated: {', '.join(dupes)}")
    return problems


class Judged(Protocol):
    """A model's answer that judges a rubric's criteria (a plan review, a task review)."""

    @property
    def criteria(self) -> Sequence[Judgement]: ...


def judge_every_criterion[T: Judged](agent: Agent[object, T], rubric: Rubric) -> None:
    """Make `agent` answer again, told what is wrong, until its answer judges every criterion of `rubric` once."""

    @agent.output_validator
    def _complete(out: T) -> T:
        problems = check_judgements(rubric, out.criteria)
        if problems:
            raise ModelRetry("; ".join(problems))
        return out


def score(rubric: Rubric, judgements: Sequence[Judgement], excused: Iterable[str] = ()) -> tuple[bool, float]:
    """(accepted, weighted pass share over applicable criteria). A required (critical) criterion that fails
    rejects; so does a share below the threshold. `excused` criteria (the parent already failed them) count as n/a."""
    weights = {c.name: c for c in rubric.criteria}
    skip = set(excused)
    applicable = [j for j in judgements if j.verdict != "n/a" and j.name in weights and j.name not in skip]
    total = sum(weights[j.name].weight for j in applicable)
    passed = sum(weights[j.name].weight for j in applicable if j.verdict == "pass")
    share = passed / total if total else 1.0
    required_failed = any(j.verdict == "fail" and weights[j.name].required for j in applicable)
    return (not required_failed and share >= rubric.threshold - 1e-9), share


def append_criteria(path: str | Path, criteria: Sequence[Criterion], name: str = "project") -> Path:
    """Add criteria to a rubric file (created if absent); a criterion already there by name is replaced."""
    p = Path(path)
    rubric = load_rubric(p) if p.exists() else Rubric(name=name, version="1", criteria=[])
    by_name = {c.name: c for c in rubric.criteria}
    by_name.update({c.name: c for c in criteria})
    out = rubric.model_copy(update={"criteria": list(by_name.values())})
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(out.to_toml(), encoding="utf-8")
    return p
