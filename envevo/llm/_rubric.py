"""Rubrics as TOML: weighted criteria, each judged reason-first as pass, fail or n/a.

    name = "plan"
    version = "1"
    threshold = 1.0          # weighted share of applicable criteria that must pass

    [[criteria]]
    name = "realizes_direction"
    weight = 2.0
    required = true          # a fail rejects whatever the score
    description = "…"

Two defaults ship with envevo (envevo/llm/prompts/{plan,task}_rubric.toml). User files add criteria; one with a
default's name replaces it. `envevo rubric learn` appends confirmed criteria to a project's file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envevo.llm._errors import LLMConfigError

Verdict = Literal["pass", "fail", "n/a"]


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    description: str
    weight: float = Field(1.0, gt=0)
    required: bool = False


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "rubric"
    version: str = "1"
    threshold: float = Field(1.0, ge=0, le=1)
    criteria: list[Criterion]

    def merged(self, others: Iterable[Rubric]) -> Rubric:
        by_name = {c.name: c for c in self.criteria}
        versions = [self.version]
        for other in others:
            versions.append(f"{other.name}@{other.version}")
            by_name.update({c.name: c for c in other.criteria})
        return self.model_copy(update={"criteria": list(by_name.values()), "version": "+".join(versions)})

    def to_toml(self) -> str:
        return tomli_w.dumps(self.model_dump(mode="json"))

    def brief(self) -> str:
        """The criteria as the model sees them."""
        lines = []
        for c in self.criteria:
            flags = f"weight {c.weight:g}{', required' if c.required else ''}"
            lines.append(f"- {c.name} ({flags}): {' '.join(c.description.split())}")
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


def default_rubric(kind: Literal["plan", "task"]) -> Rubric:
    text = resources.files("envevo.llm.prompts").joinpath(f"{kind}_rubric.toml").read_text(encoding="utf-8")
    return parse_rubric(text, f"(default {kind} rubric)")


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


def score(rubric: Rubric, judgements: Sequence[Judgement]) -> tuple[bool, float]:
    """(accepted, weighted pass share over applicable criteria). A required criterion that fails rejects."""
    weights = {c.name: c for c in rubric.criteria}
    applicable = [j for j in judgements if j.verdict != "n/a" and j.name in weights]
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
