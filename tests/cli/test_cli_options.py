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
                        ("--lineage-concurrency", "lineage_concurrency"), ("--engine", "engine")]:
        assert params[flag].default == getattr(d, field), flag
    assert params["--directions"].default == ",".join(d.directions)
    assert params["--max-drift"].default == str(d.max_drift)


TRIAL_COMMANDS = [("verify",), ("audit",), ("harden",), ("evolve",), ("rollout",), ("seeds", "select")]


def test_trial_concurrency_means_trials_on_every_command_that_runs_them() -> None:
    """One name, one meaning: --trial-concurrency (shown) is sandbox trials at once on every command that runs
    trials; --concurrency is an old spelling everywhere (hidden); evolve's lineages at once is
    --lineage-concurrency."""
    for path in TRIAL_COMMANDS:
        params = _params(*path)
        assert "trials" in params["--trial-concurrency"].help.lower() and not params["--trial-concurrency"].hidden
        assert params["--concurrency"].hidden, path
        assert "--image-map" in params and not params["--image-map"].hidden, path
    evolve = _params("evolve")
    assert "lineages" in evolve["--lineage-concurrency"].help.lower() and evolve["--lineages"].hidden


def _warnings(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "deprecated" in line]


@pytest.mark.parametrize("old,new,field", [("--concurrency", "--lineage-concurrency", "lineage_concurrency"),
                                           ("--lineages", "--lineage-concurrency", "lineage_concurrency"),
                                           ("--trial-concurrency", None, "trial_concurrency")])
def test_evolve_reads_each_spelling_into_its_setting_with_one_warning_for_an_old_one(tmp_path, monkeypatch, old,
                                                                                    new, field) -> None:
    """evolve's old --concurrency meant lineages at once, as promised until 0.3: it still does, with one line."""
    from envevo import api

    seen: list[api.EvolveRun] = []

    async def fake(config, **_kw):
        seen.append(config)
        return api.EvolveResult(run_dir=config.run_dir, lineages=[])

    monkeypatch.setattr(api, "evolve", fake)
    result = CliRunner().invoke(app, ["evolve", str(tmp_path), "--run", str(tmp_path / "run"), old, "5"])
    assert result.exit_code == 0, result.stderr
    assert getattr(seen[0].settings, field) == 5
    if new is None:
        assert _warnings(result) == []
    else:
        (line,) = _warnings(result)
        assert old in line and f"use {new}" in line and "removed in envevo 0.3" in line


@pytest.mark.parametrize("path", [("verify",), ("audit",), ("seeds", "select"), ("rollout",)])
def test_old_concurrency_is_trials_with_one_warning_and_both_at_once_is_one_line(path, tmp_path) -> None:
    """Elsewhere --concurrency meant trials: read so, with one deprecation line; giving it beside
    --trial-concurrency is a user error (which would win is a guess). A bad --env ends the command before any work."""
    args = [*path, str(tmp_path), *(["--run", str(tmp_path / "run")] if path == ("seeds", "select") else [])]
    old = CliRunner().invoke(app, [*args, "--concurrency", "2", "--env", "no-such-env"])
    (line,) = _warnings(old)
    assert "--concurrency" in line and "use --trial-concurrency" in line and old.exit_code == 2
    both = CliRunner().invoke(app, [*args, "--concurrency", "2", "--trial-concurrency", "4"])
    assert both.exit_code == 2 and "give only --trial-concurrency" in both.stderr


def test_every_command_that_runs_trials_has_the_same_defaults() -> None:
    """A task audited, verified, selected as a seed, evolved or rolled out meets the same checks, load and
    scale-out: one default per option, wherever it is shown."""
    shared = ("--env", "--repeats", "--red-team", "--mutation", "--trial-concurrency", "--executor",
              "--ray-address", "--max-sandboxes", "--start-rate")
    commands = [("verify",), ("audit",), ("evolve",), ("rollout",), ("seeds", "select")]
    defaults: dict[str, set[object]] = {}
    for path in commands:
        params = _params(*path)
        assert {"--env", "--executor", "--ray-address", "--max-sandboxes", "--start-rate"} <= set(params), path
        for flag in shared:
            if flag in params and not params[flag].hidden:
                defaults.setdefault(flag, set()).add(params[flag].default)
    d = EvolveConfig()
    assert defaults == {"--env": {d.env}, "--repeats": {d.repeats}, "--red-team": {d.red_team},
                        "--mutation": {d.mutation}, "--trial-concurrency": {d.trial_concurrency}, "--executor": {"asyncio"},
                        "--ray-address": {None}, "--max-sandboxes": {None}, "--start-rate": {None}}
