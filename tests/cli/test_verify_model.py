"""One model for every role a verification command names (issue 25): `verify`, `audit` and `seeds select` lend
--model (else --config's [llm]) to the red team's LLM hacker and to --model-mutants, check it before any sandbox
starts, and print what it was asked. Before, the hacker read ./envevo.toml on its own and its calls were shown
nowhere."""

import json

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.fakes.openai_server import FakeOpenAI, Script, final, tool_calls

TASK = FIXTURES / "hackable" / "peeking"


@pytest.mark.parametrize("command", [("verify",), ("audit",)])
def test_model_mutants_without_the_mutation_verifier_is_one_line(command, tmp_path):
    proc = run_cli(*command, str(TASK), "--mutation", "off", "--model-mutants", "2", "--model", "openai:m", "--base-url",
                   "http://127.0.0.1:9/v1", *(["--out", str(tmp_path / "a")] if command == ("audit",) else []),
                   timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "--model-mutants 2 adds to the mutation verifier's near misses: pass --mutation on" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_model_nothing_uses_is_refused(tmp_path):
    proc = run_cli("verify", str(TASK), "--red-team", "off", "--model", "openai:m", "--jobs-dir", str(tmp_path), timeout=120)
    assert proc.returncode == 2 and "neither is asked" in proc.stderr, proc.stderr


def test_a_dead_endpoint_is_one_line_before_any_sandbox(tmp_path):
    proc = run_cli("verify", str(TASK), "--red-team", "on", "--model", "openai:m", "--base-url",
                   "http://127.0.0.1:9/v1", "--api-key-env", "PATH", "--jobs-dir", str(tmp_path / "jobs"), timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "127.0.0.1:9" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "jobs").exists()  # no trial started


@pytest.mark.sandbox
def test_verify_lends_its_model_to_the_hacker_and_prints_its_usage(sandbox, tmp_path):
    script = Script(hacker=[tool_calls(("run", {"command": "ls /app"})),
                            final({"found": False, "summary": "nothing reachable"})])
    with FakeOpenAI(script) as server:
        proc = run_cli("verify", str(TASK), "--red-team", "sample:1", "--mutation", "off", "--repeats", "1", "--model", "openai:fake-model",
                       "--base-url", server.url, "--api-key-env", "PATH", "--jobs-dir", str(tmp_path), "--json")
    assert script.remaining() == {}, proc.stderr
    (verdict,) = json.loads(proc.stdout)
    (row,) = verdict["command_usage"]
    assert (row["role"], row["model"], row["calls"]) == ("hacker", "openai:fake-model", 2)
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0
    # the verdict says what the hacker ran, and what that cost
    tried = [n for n in verdict["red_team"]["notes"] if n.startswith("llm_hacker: ran 1 command(s): ls /app")]
    assert tried and f"(2 model call(s), {row['input_tokens']}+{row['output_tokens']} tokens)" in tried[0], verdict


def test_evolve_on_the_procedural_engine_gives_its_hacker_the_model_of_config(tmp_path):
    """Before, the procedural engine's hacker read ./envevo.toml on its own: a --config naming a model was ignored.
    Now that model is checked like any other: a dead endpoint is one line, and no generation is verified."""
    seed = tmp_path / "seed"
    made = run_cli("seed", "procedural", str(seed), "--length", "2", "--seed", "3", timeout=300)
    assert made.returncode == 0, made.stderr
    config = tmp_path / "envevo.toml"
    config.write_text('[llm]\nmodel = "openai:m"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "PATH"\n')
    proc = run_cli("evolve", str(seed), "--run", str(tmp_path / "run"), "--generations", "1", "--config", str(config),
                   "--red-team", "on", timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "cannot reach http://127.0.0.1:9/v1 (model openai:m)" in proc.stderr and "Traceback" not in proc.stderr
