"""A candidate of a hardened parent keeps its separate verifier: the tests stay out of the agent's container, the
verifier's own environment stays, and every new output the tests read is a declared artifact. Read from the files
(no container); the LLM Modifier's candidate that gives any of it up is rejected with the reason, which the next
attempt is told."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from envevo.evolve import GenerationContext
from envevo.evolve.engines.llm import LLMEngine
from envevo.harden import Artifact, harden_config, lost_hardening, unseen_outputs
from envevo.llm import CandidateFailed, LLMRuntime, LLMSettings
from envevo.task import load_task
from envevo.trace import Direction, Effort, Step, Trace
from tests.fakes import log_forensics as lf
from tests.fakes.models import Calls, last_prompt, scripted

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "public"


def _seed():
    return load_task(lf.SEED)


def _with_config(task, **verifier):
    out = task.model_copy(deep=True)
    cfg = dict(out.config)
    cfg["verifier"] = {**dict(cfg.get("verifier") or {}), **verifier}
    out.set_config(cfg)
    return out


def _hardened_pypi():
    task = load_task(PUBLIC / "tb2-pypi")
    harden_config(task, [Artifact(path="/app/palindromes.txt", why="named")], offline=True, uv_offline=False)
    return task


def test_an_edit_that_keeps_the_verifier_passes_and_a_shared_parent_is_not_checked() -> None:
    seed = _seed()
    evolved = seed.model_copy(deep=True)  # the realistic generation of log-forensics: new keys, same outputs
    evolved.write("tests/test_outputs.py", lf.new_tests())
    evolved.write("solution/solve.sh", lf.new_solution(), executable=True)
    assert lost_hardening(seed, evolved) == []
    shared = load_task(PUBLIC / "tb2-pypi")  # never hardened: nothing to keep
    assert lost_hardening(shared, _with_config(shared, environment_mode="shared")) == []


def test_moving_the_tests_back_into_the_agents_container_is_named() -> None:
    seed = _seed()
    for candidate in (_with_config(seed, environment_mode="shared"), _without_mode(seed)):
        lost = lost_hardening(seed, candidate)
        assert len(lost) == 1 and "the tests would run in the agent's own container" in lost[0]
        assert 'keep environment_mode = "separate"' in lost[0]


def _without_mode(task):
    out = task.model_copy(deep=True)
    cfg = dict(out.config)
    cfg["verifier"] = {k: v for k, v in cfg["verifier"].items() if k != "environment_mode"}
    out.set_config(cfg)
    return out


def test_dropping_or_opening_the_verifiers_own_environment_is_named() -> None:
    parent = _hardened_pypi()
    cfg = dict(parent.config)
    dropped = parent.model_copy(deep=True)
    dropped.set_config({**cfg, "verifier": {k: v for k, v in cfg["verifier"].items() if k != "environment"}})
    assert any("[verifier.environment] table" in p and "removed" in p for p in lost_hardening(parent, dropped))
    opened = parent.model_copy(deep=True)
    venv = {**cfg["verifier"]["environment"], "network_mode": "public"}
    opened.set_config({**cfg, "verifier": {**cfg["verifier"], "environment": venv, "network_mode": "public"}})
    lost = lost_hardening(parent, opened)
    assert any("[verifier.environment] changed (network_mode)" in p for p in lost)
    assert any("network_mode changed from 'no-network' to 'public'" in p for p in lost)


def test_a_dropped_artifact_the_tests_still_read_is_named() -> None:
    seed = _seed()
    cfg = dict(seed.config)
    candidate = seed.model_copy(deep=True)
    candidate.set_config({**cfg, "artifacts": ["/app/logs"]})
    lost = lost_hardening(seed, candidate)
    assert lost == [lost[0]] and "artifact /app/incident/report.json is no longer declared" in lost[0]
    assert "tests/test_outputs.py:8" in lost[0]


def test_a_new_output_no_artifact_covers_is_named_and_a_new_input_is_not() -> None:
    seed = _seed()
    candidate = seed.model_copy(deep=True)
    candidate.write("solution/solve.sh", seed.read_text("solution/solve.sh")
                    + "\necho done > /app/summary.txt\n", executable=True)
    candidate.write("tests/test_outputs.py", seed.read_text("tests/test_outputs.py")
                    + '\nassert open("/app/summary.txt").read() == "done\\n"\n'
                    + 'assert open("/app/reference/limits.json").read()\n')
    # An input the environment copies in, which the solution also reads: not an output.
    candidate.write("environment/reference/limits.json", "{}")
    candidate.write("environment/Dockerfile", seed.read_text("environment/Dockerfile")
                    + "\nCOPY reference/ /app/reference/\n")
    candidate.write("solution/solve.sh", candidate.read_text("solution/solve.sh") + "cat /app/reference/limits.json\n",
                    executable=True)
    assert "/app/summary.txt" in unseen_outputs(candidate) and "/app/reference/limits.json" not in unseen_outputs(candidate)
    lost = lost_hardening(seed, candidate)
    assert len(lost) == 1 and "the tests read /app/summary.txt (tests/test_outputs.py:" in lost[0]
    assert 'add "/app/summary.txt" to artifacts in task.toml' in lost[0]
    cfg = dict(candidate.config)
    candidate.set_config({**cfg, "artifacts": [*cfg["artifacts"], "/app/summary.txt"]})
    assert lost_hardening(seed, candidate) == []


# ---- the LLM Modifier: rejected before any container, told why, fixed on the next attempt ----------------------
def _runtime(modifier):
    models = {r: scripted(name=f"idle-{r}") for r in ("proposer", "reviewer", "judge")}
    return LLMRuntime(LLMSettings(output_retries=2), models={**models, "modifier": modifier})


def test_the_modifier_that_moves_the_tests_back_is_rejected_and_the_retry_is_told_why(tmp_path) -> None:
    seed = _seed()
    ctx = GenerationContext(lineage="log-forensics", generation=1, rng=random.Random(0), workdir=tmp_path)
    planner = LLMEngine(LLMRuntime(LLMSettings(), models={"proposer": scripted(lf.plan(clarified=True)),
                                                          **{r: scripted(name=r) for r in ("reviewer", "modifier", "judge")}}))
    proposal = asyncio.run(planner.propose(seed, _trace(), Direction.LENGTH, Effort.HIGH, [], ctx))
    shared = seed.config_text.replace('environment_mode = "separate"\n', "")
    assert shared != seed.config_text
    first = scripted(Calls(("write_file", {"path": "task.toml", "content": shared}),
                           ("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()})),
                     {"summary": "solution; the verifier simplified"})
    with pytest.raises(CandidateFailed) as failed:
        asyncio.run(LLMEngine(_runtime(first)).modify(seed, proposal, [], ctx))
    reason = str(failed.value)
    assert "gives up its parent's separate verifier" in reason and "agent's own container" in reason

    told: list[str] = []

    def restores(messages, info):
        told.append(last_prompt(messages))
        return Calls(("write_file", {"path": "task.toml", "content": seed.config_text}))

    second = scripted(restores, {"summary": "environment_mode restored"})
    # The loop hands a failed candidate's reason back as `modifier: …` (envevo/evolve/_loop.py).
    candidate = asyncio.run(LLMEngine(_runtime(second)).modify(seed, proposal, [f"modifier: {reason}"], ctx))
    assert "agent's own container" in told[0] and 'keep environment_mode = "separate"' in told[0]
    assert candidate.config["verifier"]["environment_mode"] == "separate"
    assert candidate.read_text("solution/solve.sh") == lf.new_solution()  # the retry continued from the draft


def _trace():
    return Trace(goal=lf.GOAL, final=lf.FINAL, steps=tuple(Step(scenario=s, skill=k) for s, k in lf.STEPS))
