"""The LLM engine over the wire: a local fake OpenAI-compatible server, the real OpenAI client, the real loop.

No containers here (the loop's container verifiers are switched off; the rubric judge still runs), so these
tests exercise the HTTP path and the loop's handling of each fault: malformed JSON, refusals, 429 with
retry-after, timeouts, effort-violating plans, a Modifier write outside the task dir, budgets, preflight.
"""

import asyncio
import json
import re
import socket

import pytest
from pydantic_ai.models import override_allow_model_requests

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import BudgetExceeded, EndpointUnavailable, LLMSettings
from envevo.store import LineageStore
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, Reply, Script, delayed, error, final, refusal_field, text, tool_calls


def settings(server, **kw):
    base = dict(model="openai:fake-model", base_url=server.url, timeout_sec=1.0, max_retries=3, max_backoff_sec=0.2)
    return LLMSettings(**{**base, **kw})


def modifier_script(*, container: bool = False):
    turns = [t for t in lf.modifier_turns() if container or t[0][0] != "run_in_container"]
    return [tool_calls(*t) for t in turns] + [final(lf.MODIFIER_SUMMARY)]


def two_span_plan():
    plan = lf.plan(clarified=False)
    plan["after"] = [plan["after"][0], {"scenario": "an extra scenario", "skill": "an extra skill"}, *plan["after"][1:]]
    return plan


def evolve_once(tmp_path, server, *, seed=2, plan_budget=3, env_budget=2, retry_skipped=False, **kw):
    """Start the log-forensics lineage and evolve one generation; returns (store, status, engine)."""
    engine, checks = build_llm_engine(settings(server, **kw), container_shell=False)
    store = LineageStore.open(tmp_path / "run")
    engine.attach_store(store)
    cfg = EvolveConfig(engine="llm", generations=1, seed=seed, plan_budget=plan_budget, env_budget=env_budget, repeats=1)

    async def main():
        await engine.preflight()
        lids = await start_lineages(store, [("log-forensics", load_task(lf.SEED))], engine, cfg, checks=checks, verifiers=[],
                                    retry_skipped=retry_skipped)
        return await evolve(store, lids, engine, cfg, checks=checks, verifiers=[])

    with override_allow_model_requests(True):
        statuses = asyncio.run(main())
    return store, statuses.get("log-forensics"), engine


def test_a_generation_survives_429_malformed_json_timeouts_effort_violations_and_escapes(tmp_path):
    script = Script(**{
        "proposer-extract": [error(429, "rate limited", {"retry-after": "1"}), final('{"goal": "x", "steps": [oops'),
                             final(lf.extraction()), final(lf.candidate_extraction())],  # the seed, then the candidate
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True))],  # the seed, then the candidate
        "proposer-plan": [final(two_span_plan()), final(lf.plan(clarified=False)),
                          delayed(final(lf.plan(clarified=True)), 2.5), final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=False)), final(lf.plan_review(accept=True))],
        "modifier": modifier_script(),
    })
    with FakeOpenAI(script) as server:
        store, status, engine = evolve_once(tmp_path, server)
    assert status == "done", store.lineage("log-forensics").reason
    assert script.remaining() == {}

    v1 = store.version("log-forensics", 1)
    assert v1.direction == "length" and v1.L == 4 and v1.verified
    assert v1.trace.steps[3].scenario == lf.NEW_STEP[0]
    task = store.load_version_task(v1.task_hash)
    assert "exfil_datasets" in task.read_text("instruction.md") and "last_exfil_utc" in task.read_text("tests/test_outputs.py")
    assert task.envevo_metadata["llm"]["prompts"]["modifier"]

    plans = store.plans("log-forensics", 1)
    assert [p.accepted for p in plans] == [False, True]
    assert "verifiable_unambiguous" in plans[0].feedback

    # 429: waited what retry-after asked; timeout: retried after backoff.
    assert engine.runtime.waits["proposer"][0] == 1.0
    assert len(engine.runtime.waits["proposer"]) == 2
    # The malformed answer and the effort violation went back to the model as retries, with the reason.
    retries = [m["content"] for r in server.requests for m in r["messages"] if m.get("role") == "tool"]
    assert any("json_invalid" in c or "Invalid JSON" in c for c in retries)
    assert any("high effort allows one contiguous span" in c for c in retries)
    assert any("would escape the task directory" in c for c in retries)
    assert not list(tmp_path.rglob("notes.txt"))

    # Tokens per role, per generation, in the store.
    totals = {t.role: t for t in store.usage_totals("log-forensics")}
    assert set(totals) == {"proposer", "reviewer", "modifier", "judge"}
    assert all(t.input_tokens > 0 and t.output_tokens > 0 for t in totals.values())
    assert {u.generation for u in store.usage("log-forensics")} == {1}
    seed_usage = [u for u in store.usage() if u.lineage_id is None]
    assert {u.role for u in seed_usage} == {"proposer", "judge"}  # seed extraction and seed judging: no lineage yet
    store.close()


def test_a_refusing_proposer_moves_on_to_the_next_direction_and_judge_feedback_reaches_the_modifier(tmp_path):
    refusal = text("I'm sorry, but I can't help with that.")
    openai_refusal = refusal_field("I can't help with making this task harder.")  # OpenAI's structured-output refusal
    script = Script(**{
        # the seed, then each candidate's ξ (realizes_plan)
        "proposer-extract": [final(lf.extraction()), final(lf.candidate_extraction()), final(lf.candidate_extraction())],
        "judge": [final(lf.task_review()), final(lf.task_review(fail="tests_or_solution_in_image", evolved=True)),
                  final(lf.task_review(evolved=True))],
        # seed 0 tries skill first: the proposer refuses it (plan budget 1, one output retry), then plans length.
        "proposer-plan": [refusal, openai_refusal, final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": [*modifier_script(), tool_calls(("read_file", {"path": "instruction.md"})), final(lf.MODIFIER_SUMMARY)],
    })
    with FakeOpenAI(script) as server:
        store, status, _ = evolve_once(tmp_path, server, seed=0, plan_budget=1, output_retries=1)
    assert status == "done", store.lineage("log-forensics").reason
    plans = store.plans("log-forensics", 1)
    assert [(p.direction, p.accepted) for p in plans] == [("skill", False), ("length", True)]
    assert "no usable plan from the proposer" in plans[0].proposal["summary"]
    cands = store.candidates("log-forensics", 1)
    assert [c.accepted for c in cands] == [False, True]
    assert any("rubric: tests_or_solution_in_image (critical)" in r for r in cands[0].reasons)
    # The second Modifier attempt was told why the first failed, and continued from its draft.
    modifier_prompts = [r for r in server.requests if "envevo-role: modifier" in json.dumps(r["messages"][0])]
    assert "rubric: tests_or_solution_in_image (critical)" in json.dumps(modifier_prompts[-2]["messages"])
    store.close()


def test_a_garbled_response_body_is_retried(tmp_path):
    script = Script(**{
        "proposer-extract": [Reply(body="<html><h1>502 Bad Gateway</h1></html>"), final(lf.extraction()),
                             final(lf.candidate_extraction())],
        "judge": [final(lf.task_review())],
        "proposer-plan": [final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": modifier_script(),
    })
    script.add("judge", final(lf.task_review(evolved=True)))
    with FakeOpenAI(script) as server:
        store, status, engine = evolve_once(tmp_path, server)
    assert status == "done" and store.version("log-forensics", 1) is not None
    assert len(engine.runtime.waits["proposer"]) == 1
    store.close()


def test_an_endpoint_that_keeps_timing_out_skips_the_seed_with_a_clear_reason_and_the_run_goes_on(tmp_path):
    # A role failure never ends the run: the seed whose extraction could not be had is skipped, with the reason.
    script = Script(**{"proposer-extract": [delayed(final(lf.extraction()), 2.5)] * 3})
    with FakeOpenAI(script) as server:
        store, status, _ = evolve_once(tmp_path, server, max_retries=2)
    assert status is None  # not evolved
    (lin,) = store.lineages()
    assert lin.status == "terminated" and lin.latest_generation == 0
    assert re.search(r"skipped: .*kept failing after 2 retries \(Timeout", lin.reason)
    store.close()


def test_a_lineage_over_budget_stops_cleanly_and_resumes_with_a_higher_cap(tmp_path):
    import envevo.evolve

    script = Script(**{
        "proposer-extract": [final(lf.extraction())],
        "judge": [final(lf.task_review())],
        "proposer-plan": [final(lf.plan(clarified=True))],
    })
    with FakeOpenAI(script) as server:
        if not hasattr(envevo.evolve, "EngineStop"):  # until the loop maps EngineStop to a lineage status (docs/llm.md)
            with pytest.raises(BudgetExceeded, match=r"cap of 2000 \(--max-tokens\)"):
                evolve_once(tmp_path, server, max_tokens=2000)
            return
        store, status, _ = evolve_once(tmp_path, server, max_tokens=2000)
    # The seed gate's judge comes first (outside lineages) and spends that cap: the seed is skipped before its
    # extraction, its gate's outcome kept.
    assert status is None and store.lineage("log-forensics").status == "terminated"
    assert store.lineage("log-forensics").reason.startswith("skipped: ") and "--max-tokens" in store.lineage("log-forensics").reason
    assert store.versions("log-forensics")[-1].generation == 0  # nothing half-committed
    assert store.version("log-forensics", 0).verified and store.version("log-forensics", 0).trace is None
    assert script.remaining() == {"proposer-extract": 1, "proposer-plan": 1}  # no model call spent past the cap
    store.close()

    # Resume with a higher cap and --retry-skipped: the lineage reopens, its seed's ξ is extracted (the gate is kept,
    # not run again), and the generation finishes. This process never judged the seed, so the judge judges it once (the parent's
    # verdict, against which the candidate is judged).
    script = Script(**{
        "proposer-extract": [final(lf.extraction()), final(lf.candidate_extraction())],
        "proposer-plan": [final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": modifier_script(),
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True))],
    })
    with FakeOpenAI(script) as server:
        store, status, _ = evolve_once(tmp_path, server, max_tokens=10**7, retry_skipped=True)
    assert status == "done" and store.version("log-forensics", 1) is not None
    assert script.remaining() == {}
    store.close()


def test_preflight_names_the_fix_before_any_work(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    engine, _ = build_llm_engine(LLMSettings(model="openai:m", base_url=dead), container_shell=False)
    with override_allow_model_requests(True), pytest.raises(EndpointUnavailable, match=f"cannot reach {dead}"):
        asyncio.run(engine.preflight())

    with FakeOpenAI(Script()) as server:
        engine, _ = build_llm_engine(LLMSettings(model="openai:other-model", base_url=server.url), container_shell=False)
        with pytest.raises(EndpointUnavailable, match="serves fake-model, not other-model"):
            asyncio.run(engine.preflight())

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engine, _ = build_llm_engine(LLMSettings(model="openai:gpt-4.1"), container_shell=False)
    with pytest.raises(EndpointUnavailable, match="export OPENAI_API_KEY"):
        asyncio.run(engine.preflight())
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    engine, _ = build_llm_engine(LLMSettings(model="anthropic:claude-sonnet-4-5"), container_shell=False)
    with pytest.raises(EndpointUnavailable, match="export ANTHROPIC_API_KEY"):
        asyncio.run(engine.preflight())


def test_one_engine_serves_several_event_loops_like_the_cli_does(tmp_path):
    """The CLI checks endpoints and reads seeds in their own event loops before the run's loop starts;
    keep-alive connections from one loop must not leak into the next."""
    from envevo.evolve import GenerationContext
    from envevo.trace import Direction, Effort

    script = Script(**{"proposer-extract": [final(lf.extraction())], "proposer-plan": [final(lf.plan(clarified=True))]})
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        engine, _ = build_llm_engine(settings(server), container_shell=False)
        asyncio.run(engine.preflight())
        trace = asyncio.run(engine.extract_trace(load_task(lf.SEED)))
        ctx = GenerationContext(lineage="log-forensics", generation=1, rng=__import__("random").Random(0), workdir=tmp_path)
        proposal = asyncio.run(engine.propose(load_task(lf.SEED), trace, Direction.LENGTH, Effort.HIGH, [], ctx))
    assert proposal.after.L == 4


def test_a_seed_the_model_will_not_read_is_skipped_with_the_reason(tmp_path):
    from envevo.evolve.engines.llm._extract import EXTRACT_RETRIES

    refusal = text("I cannot analyse this task.")
    script = Script(**{"proposer-extract": [refusal] * (EXTRACT_RETRIES + 1)})
    with FakeOpenAI(script) as server:
        store, status, _ = evolve_once(tmp_path, server)
    assert status is None and script.remaining() == {}
    lin = store.lineage("log-forensics")
    assert lin.status == "terminated" and lin.reason.startswith("skipped: no usable ξ for task log-forensics: proposer: ")
    store.close()


def test_a_modifier_that_changes_nothing_costs_one_attempt_not_the_run(tmp_path):
    import envevo.evolve

    if not hasattr(envevo.evolve, "CandidateFailed"):
        pytest.skip("the loop does not handle CandidateFailed yet (docs/llm.md, loop integration)")
    script = Script(**{
        "proposer-extract": [final(lf.extraction()), final(lf.candidate_extraction())],
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True))],
        "proposer-plan": [final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": [tool_calls(("list_files", {})), final({"summary": "nothing to do"}), *modifier_script()],
    })
    with FakeOpenAI(script) as server:
        store, status, _ = evolve_once(tmp_path, server)
    assert status == "done" and store.version("log-forensics", 1) is not None
    modifier_prompts = [r for r in server.requests if "envevo-role: modifier" in json.dumps(r["messages"][0])]
    assert "modifier: the Modifier changed nothing" in json.dumps(modifier_prompts[2]["messages"])
    store.close()
