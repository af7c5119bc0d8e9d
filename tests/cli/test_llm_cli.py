"""`envevo evolve --engine llm`, `envevo review` and `envevo rubric learn` as a user runs them, against the
local fake OpenAI-compatible server (served from this test process, the CLI in a child process)."""

import json
import socket
import subprocess

import pytest

from tests.conftest import ENVEVO, ROOT, run_cli
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, Script, final


def _wired() -> bool:
    help_text = subprocess.run([*ENVEVO, "evolve", "--help"], capture_output=True, text=True, cwd=ROOT).stdout
    return "--base-url" in help_text


pytestmark = pytest.mark.skipif(not _wired(), reason="the evolve CLI has no LLM options yet (wiring: docs/llm.md)")


def test_a_dead_endpoint_is_one_line_before_any_work(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    r = run_cli("evolve", str(lf.SEED), "--run", str(tmp_path / "run"), "--engine", "llm", "--model", "m", "--base-url", dead)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: cannot reach {dead} (model openai:m); start the server or fix "
                                             "--base-url (APIConnectionError)"]
    assert not (tmp_path / "run").exists()


def test_a_missing_key_is_one_line(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENAI_API_KEY"}
    r = run_cli("evolve", str(lf.SEED), "--run", str(tmp_path / "run"), "--engine", "llm", "--model", "openai:gpt-4.1", env=env)
    assert r.returncode == 2 and "export OPENAI_API_KEY" in r.stderr and "Traceback" not in r.stderr


def test_no_model_is_one_line(tmp_path):
    r = run_cli("evolve", str(lf.SEED), "--run", str(tmp_path / "run"), "--engine", "llm")
    assert r.returncode == 2 and "no model for the proposer: pass --model" in r.stderr


def test_review_then_rubric_learn_appends_confirmed_criteria(tmp_path):
    from envevo.store import LineageStore
    from envevo.task import load_task

    with LineageStore.open(tmp_path / "run") as store:
        store.create_lineage("log-forensics", load_task(lf.SEED))
    r = run_cli("review", str(tmp_path / "run"), "log-forensics@0", "--reject", "Expected values were typed by hand.")
    assert r.returncode == 0, r.stderr
    assert run_cli("review", str(tmp_path / "run"), "log-forensics@0").returncode == 2  # neither --accept nor --reject
    proposal = {"criteria": [{"name": "expected_values_computed", "description": "Expected values are computed by a "
                              "script on the fixtures, not typed by hand.", "weight": 1.0, "issues": [1]}]}
    with FakeOpenAI(Script(**{"rubric-learn": [final(proposal)]})) as server:
        r = run_cli("rubric", "learn", str(tmp_path / "run"), "--model", "fake-model", "--base-url", server.url, "--yes",
                    "--json", "--rubric", str(tmp_path / "envevo-rubric.toml"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["appended"] == ["expected_values_computed"]
    assert "expected_values_computed" in (tmp_path / "envevo-rubric.toml").read_text()


@pytest.mark.sandbox
def test_evolve_with_the_llm_engine_end_to_end(sandbox, tmp_path):
    script = lf.openai_script()
    run = tmp_path / "run"
    with FakeOpenAI(script) as server:
        r = run_cli("evolve", str(lf.SEED), "--run", str(run), "--engine", "llm", "--model", "fake-model",
                    "--base-url", server.url, "--generations", "1", "--seed", "2", "--repeats", "1", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    (lineage,) = json.loads(r.stdout)["lineages"]
    assert (lineage["status"], lineage["generations"], lineage["L"]) == ("done", 1, [3, 4])
    shown = json.loads(run_cli("lineage", "show", str(run), "--json").stdout)["lineages"][0]
    assert {u["role"] for u in shown["usage"]} == {"proposer", "reviewer", "modifier", "judge", "hacker"}
    # The red team's hacker ran on the run's model: on the seed before its lineage existed (metered with the run,
    # outside lineages), and on the candidate, billed to the generation that made it (inside the lineage's budget).
    hacker = [u for u in json.loads(run_cli("lineage", "show", str(run), "--json").stdout)["usage_outside_lineages"]
              if u["role"] == "hacker"]
    assert hacker and hacker[0]["input_tokens"] > 0, shown
    assert set(shown["generations"][1]["usage"]) == {"proposer", "reviewer", "modifier", "judge", "hacker"}
