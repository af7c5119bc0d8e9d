"""End to end, for real: one LLM-engine generation of the log-forensics seed against a local fake
OpenAI-compatible server, with the Modifier's commands and the oracle and invalid-test verifiers in podman.

The scripted model answers what a capable model would (tests/fakes/log_forensics.py): ξ_E with evidence, a
length plan that the Reviewer rejects once and then accepts, Modifier tool calls that add a dependent fourth
step to instruction, tests and solution (checking the logs and running the new solution in the container), and
the Modifier's own verifier run, the judge's verdicts. The candidate must pass the real verifiers and be stored as generation 1.
"""

import asyncio
import json

import pydantic_ai.models
import pytest
from pydantic_ai.models import override_allow_model_requests

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import LLMSettings
from envevo.store import LineageStore
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, Script, final, tool_calls

pytestmark = pytest.mark.sandbox


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch):
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", False)


def test_one_llm_generation_of_log_forensics_is_verified_in_containers_and_stored(sandbox, tmp_path):
    script = Script(**{
        "proposer-extract": [final(lf.extraction())],
        "judge": [final(lf.task_review()), final(lf.task_review())],
        "proposer-plan": [final(lf.plan(clarified=False)), final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=False)), final(lf.plan_review(accept=True))],
        "modifier": [*(tool_calls(*turn) for turn in lf.modifier_turns()), tool_calls(("run_verifiers", {})),
                     final(lf.MODIFIER_SUMMARY)],
    })
    with FakeOpenAI(script) as server:
        settings = LLMSettings(model="openai:fake-model", base_url=server.url, timeout_sec=30)
        engine, checks = build_llm_engine(settings, env=sandbox)
        store = LineageStore.open(tmp_path / "run")
        engine.attach_store(store)
        cfg = EvolveConfig(engine="llm", generations=1, seed=2, repeats=1, trial_concurrency=3, env=sandbox)

        async def main():
            await engine.preflight()
            lids = await start_lineages(store, [("log-forensics", load_task(lf.SEED))], engine, cfg, checks=checks)
            assert lids == ["log-forensics"], store.lineage("log-forensics").reason
            return await evolve(store, lids, engine, cfg, checks=checks)

        with override_allow_model_requests(True):
            statuses = asyncio.run(main())

    assert statuses == {"log-forensics": "done"}, store.lineage("log-forensics").reason
    assert script.remaining() == {}
    v1 = store.version("log-forensics", 1)
    assert v1 is not None and v1.verified and v1.direction == "length" and v1.L == 4
    assert {"instruction", "verification", "solution"} <= set(v1.mutated)
    assert v1.D_T > store.version("log-forensics", 0).D_T

    (candidate,) = store.candidates("log-forensics", 1)
    reports = {r.verifier: r for r in store.verifications(candidate.id)}
    assert {k: r.passed for k, r in reports.items()} == {"oracle": True, "invalid_test": True, "rubric": True}

    task = store.load_version_task(v1.task_hash)
    assert f'"exfil_datasets": {json.dumps(lf.NEW_KEYS["exfil_datasets"])}' in task.read_text("tests/test_outputs.py")
    assert "last_exfil_utc" in task.read_text("instruction.md")
    # The Modifier saw real container output: the app log, and the new solution's report.
    results = [m["content"] for r in server.requests for m in r["messages"] if m.get("role") == "tool"]
    assert any('"event": "export"' in c for c in results)
    assert any('"last_exfil_utc": "2024-03-13T20:16:17Z"' in c for c in results)
    assert any("would escape the task directory" in c for c in results)
    assert results[-1].startswith("PASSED")  # the Modifier's own run of the oracle and invalid-test verifiers
    assert {t.role for t in store.usage_totals("log-forensics")} == {"proposer", "reviewer", "modifier", "judge"}
    store.close()
