"""The main job from a task written elsewhere: `envevo evolve` on a seed whose tests share the agent's container (Harbor's
default, most public tasks), with the default settings (red team on, mutation verifier on, harden on). The seed gate
finds it hackable, harden moves its tests to a separate verifier and proves the copy, and the lineage evolves from the
hardened copy: generation 0 is that copy, with its provenance, and generation 1 is verified and committed.

The LLM engine is driven by the scripted generation of tests/fakes/log_forensics.py through the local fake
OpenAI-compatible server; every trial is real."""

import json

import pytest

from tests.conftest import run_cli
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, final


@pytest.mark.sandbox
@pytest.mark.timeout(2400)
def test_evolve_from_a_shared_verifier_seed_hardens_it_and_evolves(sandbox, tmp_path):
    seed = lf.shared_seed(tmp_path / "log-forensics")
    run = tmp_path / "run"
    # The seed and its hardened copy are each attacked by the hacker and judged, before the candidate is.
    script = lf.openai_script(hacker_sessions=3)
    script.queues["judge"].insert(1, final(lf.task_review()))
    with FakeOpenAI(script) as server:
        r = run_cli("evolve", str(seed), "--run", str(run), "--engine", "llm", "--model", "fake-model",
                    "--base-url", server.url, "--generations", "1", "--seed", "2", "--json")
    assert r.returncode == 0, r.stderr[-4000:]
    (lineage,) = json.loads(r.stdout)["lineages"]
    assert (lineage["status"], lineage["generations"]) == ("done", 1), (lineage["reason"], r.stderr[-6000:])
    assert "the seed was hardened and proved" in r.stderr, r.stderr[-4000:]

    from envevo.store import LineageStore
    from envevo.task import load_task

    with LineageStore.open(run) as store:
        gen0 = store.load_version_task(store.version(lineage["lineage"], 0).task_hash)
        gen1 = store.version(lineage["lineage"], 1)
        assert gen1.verified
        gen1_task = store.load_version_task(gen1.task_hash)
    # Generation 0 is the proved hardened copy of the seed as given, and says so.
    assert gen0.envevo_metadata["hardened"]["from_content_hash"] == load_task(seed).content_hash()
    for task in (gen0, gen1_task):  # and the evolved generation kept the hardening
        config = task.config
        assert config["verifier"]["environment_mode"] == "separate"
        assert "/app/incident/report.json" in config["artifacts"]
