"""Token budgets: every role's prompt on the realistic fixtures and the shipped seeds stays within the budget that
docs/llm.md documents ("Prompt budgets"), counted in characters of what the request carries: the instructions,
the user prompt and the tool definitions (about 4 characters per token)."""

import asyncio
import json
import random
from pathlib import Path

import pytest
from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from envevo.evolve import GenerationContext
from envevo.evolve.engines.llm import LLMEngine
from envevo.llm import CandidateFailed, LLMRuntime, LLMSettings
from envevo.task import load_task
from envevo.trace import Direction, Effort

ROOT = Path(__file__).resolve().parents[2]
TASKS = sorted([*(ROOT / "tests/fixtures/realistic").iterdir(), *(ROOT / "examples/seeds").iterdir()])
# characters per request; docs/llm.md states the same numbers
BUDGETS = {"proposer-extract": 40_000, "proposer-plan": 42_000, "reviewer": 42_000, "modifier": 12_000, "judge": 48_000}


def _size(messages, info) -> int:
    sent = (messages[-1].instructions or "") + "".join(str(getattr(p, "content", "")) for m in messages for p in m.parts)
    tools = [*info.function_tools, *info.output_tools]
    return len(sent) + len(json.dumps([[t.name, t.description, t.parameters_json_schema] for t in tools]))


def measure(task_dir: Path, tmp_path: Path) -> dict[str, int]:
    task = load_task(task_dir)
    sizes: dict[str, int] = {}
    engine: LLMEngine

    def answer(role):
        def fn(messages, info):
            props = info.output_tools[0].parameters_json_schema.get("properties", {}) if info.output_tools else {}
            name = {"proposer": "proposer-plan" if "after" in props else "proposer-extract"}.get(role, role)
            sizes.setdefault(name, _size(messages, info))
            if name == "proposer-extract":
                line = next(ln for ln in task.read_text("instruction.md").splitlines() if ln.strip()).strip()[:60]
                args = {"goal": "g", "steps": [{"scenario": "s", "skill": "k",
                                                "evidence": [{"file": "instruction.md", "quote": line}]}]}
            elif name == "proposer-plan":
                args = {"rationale": "r", "after": [{"scenario": "s", "skill": "k"}, {"scenario": "s2", "skill": "k2"}],
                        "changes": {"instruction": "i", "environment": "unchanged", "tests": "t", "solution": "s"},
                        "summary": "length"}
            elif role == "modifier":
                args = {"summary": "nothing"}
            else:
                rubric = engine.plan_rubric if role == "reviewer" else engine.task_rubric
                args = {"criteria": [{"name": c.name, "reason": "ok", "verdict": "pass"} for c in rubric.criteria],
                        "feedback": "ok"}
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

        return FunctionModel(fn, model_name=role)

    runtime = LLMRuntime(LLMSettings(), models={r: answer(r) for r in ("proposer", "reviewer", "modifier", "judge")})
    engine = LLMEngine(runtime)
    ctx = GenerationContext(lineage=task.name, generation=1, rng=random.Random(0), workdir=tmp_path)

    async def main():
        trace = await engine.extract_trace(task)
        proposal = await engine.propose(task, trace, Direction.LENGTH, Effort.LOW, [], ctx)
        await engine.review(task, proposal, ctx)
        with pytest.raises(CandidateFailed):  # the scripted Modifier changes nothing; its prompt is what counts
            await engine.modify(task, proposal, [], ctx)
        await engine.judge().check(task, task_dir)

    asyncio.run(main())
    return sizes


@pytest.mark.parametrize("task_dir", TASKS, ids=[t.name for t in TASKS])
def test_every_roles_prompt_stays_within_its_budget(task_dir, tmp_path):
    sizes = measure(task_dir, tmp_path)
    assert sizes.keys() == BUDGETS.keys()
    over = {role: size for role, size in sizes.items() if size > BUDGETS[role]}
    assert not over, f"{task_dir.name}: over budget {over} (budgets {BUDGETS})"


def test_a_task_with_a_huge_fixture_renders_within_the_budget_and_keeps_the_files_that_define_it(tmp_path):
    from envevo.llm import render_task
    from envevo.task import save

    task = load_task(ROOT / "tests/fixtures/realistic/python-slim")
    draft = save(task, tmp_path / "big")
    for i in range(12):  # 12 × 30 kB of data beside the task's own files
        (draft / "environment" / f"data-{i}.csv").write_text("id,value\n" + "".join(f"{n},{n * 7}\n" for n in range(3000)))
    text = render_task(load_task(draft))
    assert len(text) < 40_000
    for path in ("instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"):
        assert f"### {path}" in text and task.read_text(path)[:200] in text
    order = [text.index(f"### {p}") for p in ("instruction.md", "environment/Dockerfile", "tests/test.sh",
                                               "solution/solve.sh", "task.toml", "environment/data-0.csv")]
    assert order == sorted(order)
    assert "not shown: the prompt's size budget is spent" in text
