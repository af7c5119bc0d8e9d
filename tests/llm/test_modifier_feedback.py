"""End to end in podman: the Modifier sees what failed. A first attempt changes the tests and the instruction but
not the solution; the real oracle trial fails it, and the second attempt's request carries the failing checks and
the tail of test-stdout (not just a host path), so the scripted Modifier fixes the solution and the candidate is
accepted. One LLM generation of log-forensics through the fake OpenAI server and the real loop."""

import asyncio

import pytest
from pydantic_ai.models import override_allow_model_requests

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import LLMSettings
from envevo.store import LineageStore
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, Script, final, last_user_text, tool_calls


@pytest.mark.sandbox
def test_the_second_attempt_sees_the_failing_checks_and_fixes_the_candidate(sandbox, tmp_path):
    seen: list[str] = []

    def second_attempt(request):
        prompt = last_user_text(request)
        seen.append(prompt)
        assert "The verifiers rejected the previous attempt" in prompt
        assert "failing tests (test-stdout):" in prompt and "FAIL" in prompt and "exfil_datasets" in prompt
        assert "lines of test-stdout" in prompt and "check(s) failed" in prompt
        return tool_calls(("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()}))

    script = Script(**{
        "hacker": lf.hacker_turns(3),  # the red team's LLM hacker, on the run's model: the seed and each attempt
        # the seed, then each attempt (realizes_plan re-extracts ξ from every candidate)
        "proposer-extract": [final(lf.extraction()), final(lf.candidate_extraction()), final(lf.candidate_extraction())],
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True)), final(lf.task_review(evolved=True))],
        "proposer-plan": [final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": [tool_calls(("write_file", {"path": "tests/test_outputs.py", "content": lf.new_tests()}),
                                ("write_file", {"path": "instruction.md", "content": lf.new_instruction()})),
                     final({"summary": "tests and instruction"}),
                     second_attempt, final({"summary": "solution"})],
    })
    with FakeOpenAI(script) as server:
        settings = LLMSettings(model="openai:fake-model", base_url=server.url, timeout_sec=30)
        engine, checks = build_llm_engine(settings, env=sandbox)
        store = LineageStore.open(tmp_path / "run")
        engine.attach_store(store)
        cfg = EvolveConfig(engine="llm", generations=1, seed=2, repeats=1, env_budget=2, trial_concurrency=3, env=sandbox)

        async def main():
            await engine.preflight()
            lids = await start_lineages(store, [("log-forensics", load_task(lf.SEED))], engine, cfg, checks=checks)
            return await evolve(store, lids, engine, cfg, checks=checks)

        with override_allow_model_requests(True):
            statuses = asyncio.run(main())
    assert statuses == {"log-forensics": "done"}, store.lineage("log-forensics").reason
    assert len(seen) == 1 and script.remaining() == {}
    first, second = store.candidates("log-forensics", 1)
    assert not first.accepted and any("oracle" in r for r in first.reasons)
    assert second.accepted
    v1 = store.version("log-forensics", 1)
    assert v1.verified and store.load_version_task(v1.task_hash).read_text("solution/solve.sh") == lf.new_solution()
    store.close()
