"""The shared options: one model grammar, defaults read from the config models, one meaning per flag name, and
the deprecated spellings that scripts still use."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.evolve import EvolveConfig
from envevo.llm import litellm_model, normalize_model, settings_with_options


@pytest.mark.parametrize("text,base_url,canonical", [
    ("openai:gpt-4.1", None, "openai:gpt-4.1"),
    ("anthropic:claude-sonnet-4-5", None, "anthropic:claude-sonnet-4-5"),
    ("openai:Qwen/Qwen3-32B", "http://h:8000/v1", "openai:Qwen/Qwen3-32B"),
    ("openai/gpt-4.1", None, "openai:gpt-4.1"),  # LiteLLM's spelling, unambiguous without a base URL
    ("Qwen/Qwen3-32B", "http://h:8000/v1", "openai:Qwen/Qwen3-32B"),  # a served name
    ("openai/gpt-oss-20b", "http://h:8000/v1", "openai:openai/gpt-oss-20b"),  # served names keep their slash
    ("qwen3:8b", "http://h:8000/v1", "openai:qwen3:8b"),
    ("vllm:qwen3", "http://h:8000/v1", "vllm:qwen3"),
])
def test_one_model_grammar_for_the_llm_engine(text: str, base_url: str | None, canonical: str) -> None:
    assert normalize_model(text, base_url=base_url) == canonical


@pytest.mark.parametrize("text,base_url,litellm", [
    ("openai:gpt-5", None, "openai/gpt-5"),
    ("openai/gpt-5", None, "openai/gpt-5"),  # the old rollout spelling, unchanged
    ("openai/Qwen/Qwen3-32B", "http://h:8000/v1", "openai/Qwen/Qwen3-32B"),
    ("openai:Qwen/Qwen3-32B", "http://h:8000/v1", "openai/Qwen/Qwen3-32B"),
    ("vllm:Qwen/Qwen3-32B", "http://h:8000/v1", "openai/Qwen/Qwen3-32B"),
    ("Qwen/Qwen3-32B", "http://h:8000/v1", "openai/Qwen/Qwen3-32B"),
    ("hosted_vllm/m", "http://h:8000/v1", "hosted_vllm/m"),
    ("gemini:gemini-2.5-pro", None, "gemini/gemini-2.5-pro"),
    ("ollama/qwen3:8b", None, "ollama/qwen3:8b"),
    ("gpt-4.1", None, "gpt-4.1"),
    ("simulation", None, "simulation"),
])
def test_rollout_models_reach_harbor_in_litellm_form(text: str, base_url: str | None, litellm: str) -> None:
    assert litellm_model(text, base_url=base_url) == litellm


def test_settings_read_old_and_new_spellings_alike(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no envevo.toml here
    new = settings_with_options(model="openai:gpt-4.1", role_model=["judge=anthropic:claude-sonnet-4-5"])
    old = settings_with_options(model="openai/gpt-4.1", role_model=["judge=anthropic/claude-sonnet-4-5"])
    assert {r: s.label for r, s in new.specs().items()} == {r: s.label for r, s in old.specs().items()}
    assert new.spec("judge").label == "anthropic:claude-sonnet-4-5"
    served = settings_with_options(model="Qwen/Qwen3-32B", base_url="http://h:8000/v1").spec("proposer")
    assert (served.provider, served.name, served.base_url) == ("openai", "Qwen/Qwen3-32B", "http://h:8000/v1")


def _params(*path: str) -> dict[str, object]:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return {opt: p for p in command.params for opt in getattr(p, "opts", [])}


def test_evolve_defaults_are_the_config_defaults() -> None:
    params, d = _params("evolve"), EvolveConfig()
    for flag, field in [("--generations", "generations"), ("--seed", "seed"), ("--plan-budget", "plan_budget"),
                        ("--env-budget", "env_budget"), ("--env", "env"), ("--repeats", "repeats"),
                        ("--red-team", "red_team"), ("--trial-concurrency", "trial_concurrency"),
                        ("--lineages", "lineage_concurrency"), ("--engine", "engine")]:
        assert params[flag].default == getattr(d, field), flag
    assert params["--directions"].default == ",".join(d.directions)
    assert params["--max-drift"].default == str(d.max_drift)


def test_concurrency_means_trials_wherever_it_is_shown() -> None:
    for path in (("verify",), ("audit",), ("rollout",), ("seeds", "select")):
        assert "trials" in _params(*path)["--concurrency"].help.lower(), path
    evolve = _params("evolve")
    assert evolve["--concurrency"].hidden and "--lineages" in evolve


def test_evolve_concurrency_still_works_with_one_warning(tmp_path) -> None:
    result = CliRunner().invoke(app, ["evolve", str(tmp_path), "--run", str(tmp_path / "run"), "--concurrency", "2",
                                      "--red-team", "bogus"])
    warnings = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert len(warnings) == 1 and "--lineages" in warnings[0] and "removed in envevo 0.3" in warnings[0]
    assert result.exit_code == 2  # the bad --red-team then ends it in one line, before any work


def test_every_command_that_runs_trials_has_the_same_defaults() -> None:
    """A task audited, verified, selected as a seed, evolved or rolled out meets the same checks, load and
    scale-out: one default per option, wherever it is shown (evolve names its trials --trial-concurrency, as its
    old --concurrency meant lineages until envevo 0.3)."""
    shared = ("--env", "--repeats", "--red-team", "--mutation", "--concurrency", "--trial-concurrency", "--executor",
              "--ray-address", "--max-sandboxes", "--start-rate")
    commands = [("verify",), ("audit",), ("evolve",), ("rollout",), ("seeds", "select")]
    defaults: dict[str, set[object]] = {}
    for path in commands:
        params = _params(*path)
        assert {"--env", "--executor", "--ray-address", "--max-sandboxes", "--start-rate"} <= set(params), path
        for flag in shared:
            if flag in params and not params[flag].hidden:
                key = "--concurrency" if flag == "--trial-concurrency" else flag
                defaults.setdefault(key, set()).add(params[flag].default)
    d = EvolveConfig()
    assert defaults == {"--env": {d.env}, "--repeats": {d.repeats}, "--red-team": {d.red_team},
                        "--mutation": {d.mutation}, "--concurrency": {d.trial_concurrency}, "--executor": {"asyncio"},
                        "--ray-address": {None}, "--max-sandboxes": {None}, "--start-rate": {None}}
