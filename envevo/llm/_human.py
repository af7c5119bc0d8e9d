"""Human review feeds the rubric: record verdicts on versions, then turn recorded issues into rubric criteria.

Verdicts live in `RUN/human_reviews.jsonl`, one JSON object per line, appended (never rewritten), so reviews
from several people or sessions simply accumulate. `learn_criteria` asks a model to generalize the rejected
versions' issues into criteria; the caller shows them, and `append_criteria` adds the confirmed ones to the
project's rubric file, which every later run's judge reads.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from envevo.llm._errors import LLMConfigError
from envevo.llm._prompts import load_prompt
from envevo.llm._rubric import Criterion, Rubric
from envevo.llm._runtime import LLMRuntime

REVIEWS_FILE = "human_reviews.jsonl"
#: The project's own rubric file: `envevo rubric learn` appends to it and the judge reads it when present.
PROJECT_RUBRIC = Path("envevo-rubric.toml")


class HumanReview(BaseModel):
    lineage: str
    generation: int
    task_hash: str
    verdict: Literal["accept", "reject"]
    issue: str | None = None
    reviewer: str | None = None
    created_at: str


def resolve_version(store, ref: str):
    """A version by `<lineage>@<g>`, `<lineage>/g<NN>`, the export name `<lineage>__g<NN>`, or a hash prefix."""
    m = re.fullmatch(r"(.+?)(?:@|/g|__g)(\d+)", ref)
    if m:
        lineage, g = m.group(1), int(m.group(2))
        known = {lin.id for lin in store.lineages()}
        if lineage not in known:
            raise LLMConfigError(f"no lineage {lineage!r} in {store.run_dir}; lineages: {', '.join(sorted(known)) or 'none'}")
        v = store.version(lineage, g)
        if v is None:
            raise LLMConfigError(f"lineage {lineage} has no committed generation {g}")
        return v
    if re.fullmatch(r"[0-9a-f]{8,64}", ref):
        hits = [v for v in store.versions() if v.task_hash.startswith(ref)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise LLMConfigError(f"hash prefix {ref} matches {len(hits)} versions; give more characters")
    raise LLMConfigError(f"no version {ref!r}: use LINEAGE@GENERATION (e.g. csv-etl@3), LINEAGE__g03, or a task hash prefix")


def record_review(store, ref: str, *, accept: bool, issue: str | None = None, reviewer: str | None = None) -> HumanReview:
    if not accept and not (issue and issue.strip()):
        raise LLMConfigError("a rejection needs the issue: --reject \"what is wrong\"")
    v = resolve_version(store, ref)
    review = HumanReview(lineage=v.lineage_id, generation=v.generation, task_hash=v.task_hash,
                         verdict="accept" if accept else "reject", issue=(issue or "").strip() or None,
                         reviewer=reviewer, created_at=datetime.now(UTC).isoformat(timespec="seconds"))
    with open(Path(store.run_dir) / REVIEWS_FILE, "a", encoding="utf-8") as f:
        f.write(review.model_dump_json() + "\n")
    return review


def reviews(run_dir: str | Path) -> list[HumanReview]:
    path = Path(run_dir) / REVIEWS_FILE
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(HumanReview.model_validate_json(line))
            except ValueError as e:
                raise LLMConfigError(f"{path}:{n} is not a review record: {e}".splitlines()[0]) from e
    return out


def latest_verdicts(all_reviews: list[HumanReview]) -> dict[tuple[str, int], HumanReview]:
    """The last verdict per version: a later --accept overrides an earlier --reject."""
    return {(r.lineage, r.generation): r for r in all_reviews}


class ProposedCriterion(BaseModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    description: str
    weight: float = Field(1.0, gt=0)
    issues: list[int] = Field(default_factory=list, description="numbers of the issues it covers")

    def criterion(self) -> Criterion:
        return Criterion(name=self.name, description=self.description, weight=self.weight)


class Proposals(BaseModel):
    criteria: list[ProposedCriterion]


async def learn_criteria(runtime: LLMRuntime, issues: list[HumanReview], rubric: Rubric) -> list[ProposedCriterion]:
    """New criteria generalizing the rejected versions' issues (none to propose: an empty list)."""
    rejected = [r for r in issues if r.verdict == "reject" and r.issue]
    if not rejected:
        return []
    prompt = load_prompt("rubric-learn")
    agent = runtime.agent("judge", Proposals, prompt.instructions.replace("{rubric}", rubric.brief()))
    text = "Issues found by human reviewers:\n" + "\n".join(
        f"{i}. ({r.lineage} generation {r.generation}) {r.issue}" for i, r in enumerate(rejected, 1))
    out: Proposals = await runtime.run(agent, text, role="judge")
    known = {c.name for c in rubric.criteria}
    return [c for c in out.criteria if c.name not in known]
