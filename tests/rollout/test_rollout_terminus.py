"""A real Harbor agent against a model endpoint: `envevo rollout --agent terminus-2 --base-url …`, end to end.

The endpoint is a local fake OpenAI-compatible server (tests/fakes/terminus_server.py) scripted with the shell
commands that solve examples/seeds/log-forensics. terminus-2 calls it from this machine (LiteLLM, in the Harbor
process) and types the commands into tmux in the task's container; the seed's own verifier scores the result.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.rollout_cmd import rollout
from envevo.errors import UserError
from envevo.rollout._run import parse_agent_kwargs, probe_endpoint
from envevo.store import LineageStore
from tests.conftest import ROOT, run_cli
from tests.fakes.terminus_server import SOLVE_LOG_FORENSICS, WRONG_LOG_FORENSICS, serve

SEED = ROOT / "examples" / "seeds" / "log-forensics"
MODEL = "openai/fake-model"
# Costs make LiteLLM price the fake model; no recording spares the asciinema install (about 20 s a trial).
MODEL_INFO = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "max_input_tokens": 32768,
              "max_output_tokens": 4096}


def _rollout(url: str, store: Path):
    return run_cli("rollout", str(SEED), "--agent", "terminus-2", "--model", MODEL, "--base-url", url, "-k", "1",
                   "--concurrency", "1", "--run", str(store), "--agent-kwarg", "record_terminal_session=false",
                   "--agent-kwarg", f"model_info={json.dumps(MODEL_INFO)}", "--json",
                   env={**os.environ, "OPENAI_API_KEY": "sk-fake"}, timeout=900)


def _only_rollout(store: Path):
    with LineageStore.open(store, create=False) as s:
        [row] = s.rollouts()
    return row


@pytest.mark.sandbox
def test_terminus2_solves_a_seed_through_a_model_endpoint(sandbox, tmp_path: Path) -> None:
    with serve(SOLVE_LOG_FORENSICS) as server:
        result = _rollout(server.url, tmp_path / "run")
    script = server.handler
    assert result.returncode == 0, result.stderr
    [summary] = json.loads(result.stdout)
    assert (summary["agent"], summary["model"], summary["simulated"]) == ("terminus-2", MODEL, False)
    assert (summary["n"], summary["passes"], summary["errors"]) == (1, 1, {})

    # The model saw terminus-2's prompt with the task's instruction, and answered every turn from the script.
    instruction = (SEED / "instruction.md").read_text().strip().splitlines()[0]
    assert script.prompts and all(instruction in p for p in script.prompts)
    assert (script.served, script.confirmations, script.exhausted) == (len(SOLVE_LOG_FORENSICS), 1, 0)

    row = _only_rollout(tmp_path / "run")
    assert row.reward == 1.0 and row.error_kind == "ok" and not row.simulated
    assert row.turns == len(server.requests) >= len(SOLVE_LOG_FORENSICS) + 1  # + the confirmation round
    assert row.input_tokens > 0 and row.output_tokens > 0
    expected = row.input_tokens * MODEL_INFO["input_cost_per_token"] + row.output_tokens * MODEL_INFO["output_cost_per_token"]
    assert row.cost_usd == pytest.approx(expected)
    trajectory = Path(row.trial_dir) / "agent" / "trajectory.json"
    assert "cat /app/incident/report.json" in trajectory.read_text()


@pytest.mark.sandbox
def test_commands_that_do_not_solve_the_seed_fail_it(sandbox, tmp_path: Path) -> None:
    with serve(WRONG_LOG_FORENSICS) as server:
        result = _rollout(server.url, tmp_path / "run")
    assert result.returncode == 0, result.stderr
    [summary] = json.loads(result.stdout)
    assert (summary["n"], summary["passes"], summary["pass_rate"], summary["errors"]) == (1, 0, 0.0, {})
    row = _only_rollout(tmp_path / "run")
    assert row.reward == 0.0 and row.error_kind == "ok"  # a fail of the agent, not an infrastructure error
    assert row.turns == 2 and row.input_tokens > 0


def test_agent_config_errors_are_one_line_before_any_sandbox(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(rollout)
    cases = {
        ("--agent", "terminus-3", "--model", MODEL): "unknown agent 'terminus-3'",
        ("--agent", "terminus-2", "--model", MODEL, "--agent-kwarg", "max_turns"): "is not key=value",
        ("--agent", "terminus-2", "--model", MODEL, "--agent-kwarg", "turns=3"): "Unknown option 'turns'",
        ("--agent", "terminus-2", "--base-url", "http://127.0.0.1:9/v1"): "needs a model",
        ("--agent", "terminus-2", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1"): "set OPENAI_API_KEY",
        ("--agent", "terminus-2", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1",
         "--api-key-env", "ENVEVO_NO_SUCH_KEY"): "'ENVEVO_NO_SUCH_KEY' selected by --api-key-env is not set",
        ("--agent", "sim-strong", "--base-url", "http://127.0.0.1:9/v1"): "simulated profile",
    }
    for args, message in cases.items():
        result = CliRunner().invoke(app, [str(SEED), *args, "-k", "1", "--run", str(tmp_path / "run")],
                                    env={"OPENAI_API_KEY": None, "ENVEVO_NO_SUCH_KEY": None, "COLUMNS": "400"})
        assert result.exit_code == 2, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and lines[0].startswith("error:"), (args, result.stderr)
    assert not (tmp_path / "run").exists()  # rejected before the store or any sandbox was touched


def test_agent_kwargs_parse_as_json_where_they_can() -> None:
    kwargs = parse_agent_kwargs(["max_turns=50", "temperature=0.7", "record_terminal_session=false", "parser_name=xml",
                                 'model_info={"max_input_tokens": 32768}', "llm_call_kwargs={bad json"])
    assert kwargs == {"max_turns": 50, "temperature": 0.7, "record_terminal_session": False, "parser_name": "xml",
                      "model_info": {"max_input_tokens": 32768}, "llm_call_kwargs": "{bad json"}
    with pytest.raises(UserError, match="not key=value"):
        parse_agent_kwargs(["=3"])


def test_the_endpoint_is_probed_before_any_trial(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    with serve(SOLVE_LOG_FORENSICS) as server:
        asyncio.run(probe_endpoint(MODEL, {"base_url": server.url}))
        with pytest.raises(UserError, match="serves fake-model, not other-model"):
            asyncio.run(probe_endpoint("openai/other-model", {"base_url": server.url}))
        assert not server.handler.prompts  # a model list, no chat completion
    with pytest.raises(UserError, match=r"cannot reach http://127\.0\.0\.1:9/v1 \(model openai/fake-model\)"):
        asyncio.run(probe_endpoint(MODEL, {"base_url": "http://127.0.0.1:9/v1"}))


def test_a_model_agents_answers_are_capped_by_max_output_tokens(tmp_path: Path, monkeypatch) -> None:
    """terminus-2 gets the output cap in its llm_call_kwargs (what it forwards to every model call), the default
    unless --max-output-tokens says otherwise; an --agent-kwarg that sets it wins; Harbor accepts it (issue 25)."""
    from envevo.cli.rollout_cmd import DEFAULT_OUTPUT_CAP
    from envevo.runtime import TrialSpec, check_agent, with_output_cap

    seen: list[dict] = []

    async def fake_run(tasks, agent, model, k, **kw):
        seen.append(kw["agent_kwargs"])
        return []

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setattr("envevo.rollout.rollout", fake_run)
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    app = typer.Typer()
    app.command()(rollout)
    base = [str(SEED), "--agent", "terminus-2", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1",
            "--run", str(tmp_path / "run"), "--json"]
    for extra in ([], ["--max-output-tokens", "900"], ["--agent-kwarg", 'llm_call_kwargs={"max_tokens": 50}']):
        CliRunner().invoke(app, [*base, *extra])
    assert [kw["llm_call_kwargs"]["max_tokens"] for kw in seen] == [DEFAULT_OUTPUT_CAP, 900, 50]
    kwargs = with_output_cap("terminus-2", {"llm_call_kwargs": {"extra_body": {"x": 1}}}, 700)
    assert kwargs == {"llm_call_kwargs": {"extra_body": {"x": 1}, "max_tokens": 700}}
    check_agent(TrialSpec(task_dir=SEED, agent="terminus-2", model=MODEL, trials_dir=tmp_path, agent_kwargs=kwargs))
    assert with_output_cap("mini-swe-agent", {}, 700) == {"max_tokens": 700}
    assert with_output_cap("oracle", {"a": 1}, 700) == {"a": 1}  # no model, nothing to cap
