"""Model configuration, prompts, rubrics: what a user writes on the command line or in envevo.toml."""

import pytest

from envevo.errors import UserError
from envevo.llm import (
    PROMPT_NAMES,
    Criterion,
    Judgement,
    LLMConfigError,
    LLMSettings,
    append_criteria,
    default_rubric,
    load_prompt,
    load_rubric,
    load_settings,
    parse_model,
    prompt_versions,
    score,
)


def test_model_specs():
    assert parse_model("openai:gpt-4.1").label == "openai:gpt-4.1"
    assert parse_model("anthropic:claude-sonnet-4-5").provider == "anthropic"
    assert parse_model("openai:ft:gpt-4o:acme:1").name == "ft:gpt-4o:acme:1"  # colons in the name survive
    local = parse_model("Qwen/Qwen3-32B", base_url="http://gpu:8000/v1")
    assert (local.provider, local.name, local.endpoint) == ("openai", "Qwen/Qwen3-32B", "http://gpu:8000/v1")
    assert parse_model("vllm:Qwen/Qwen3-32B", base_url="http://gpu:8000/v1").provider == "openai"
    with pytest.raises(LLMConfigError, match="names no provider"):
        parse_model("gpt-4.1")
    with pytest.raises(LLMConfigError, match="give its --base-url"):
        parse_model("vllm:Qwen/Qwen3-32B")


def test_api_keys_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MY_KEY", "sk-test")
    assert parse_model("openai:gpt-4.1").api_key() is None
    assert parse_model("openai:gpt-4.1", api_key_env="MY_KEY").api_key() == "sk-test"
    # A local server without a configured key gets a placeholder: vLLM and SGLang accept any.
    assert parse_model("m", base_url="http://localhost:8000/v1").api_key() == "not-needed"


def test_roles_resolve_from_file_then_command_line(tmp_path):
    cfg = tmp_path / "envevo.toml"
    cfg.write_text(
        '[llm]\nmodel = "openai:gpt-4.1"\nmax_cost_usd = 5.0\nrubrics = ["rubrics/extra.toml"]\n'
        '[llm.roles.judge]\nmodel = "openai:judge-model"\nbase_url = "http://judge:8000/v1"\n'
        '[llm.prices."openai:judge-model"]\ninput = 0.0\noutput = 0.0\n'
    )
    s = load_settings(cfg)
    assert s.spec("proposer").label == "openai:gpt-4.1"
    assert s.spec("judge").endpoint == "http://judge:8000/v1"
    assert s.rubrics == [tmp_path / "rubrics" / "extra.toml"]  # relative to the file
    assert s.price(s.spec("judge")).input == 0.0
    o = s.with_overrides(model="anthropic:claude-sonnet-4-5", role_models={"reviewer": "openai:gpt-4.1-mini"}, max_tokens=1000)
    assert o.spec("proposer").label == "anthropic:claude-sonnet-4-5"
    assert o.spec("reviewer").label == "openai:gpt-4.1-mini"
    assert o.spec("judge").label == "openai:judge-model"  # a role's own model wins over --model
    assert (o.max_cost_usd, o.max_tokens) == (5.0, 1000)


def test_config_errors_are_one_line_user_errors(tmp_path):
    bad = tmp_path / "envevo.toml"
    bad.write_text("[llm]\nmax_concurency = 3\n")
    with pytest.raises(UserError, match=r"\[llm\] max_concurency: Extra inputs"):
        load_settings(bad)
    bad.write_text("[llm\n")
    with pytest.raises(UserError, match="not valid TOML"):
        load_settings(bad)
    with pytest.raises(UserError, match="does not exist"):
        load_settings(tmp_path / "missing.toml")
    with pytest.raises(UserError, match=r"no model for the proposer: pass --model"):
        LLMSettings().spec("proposer")
    with pytest.raises(UserError, match="unknown role"):
        LLMSettings().with_overrides(role_models={"critic": "openai:x"})


def test_no_config_file_means_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_settings() == LLMSettings()


def test_prompts_are_versioned_package_data():
    versions = prompt_versions()
    assert set(versions) == set(PROMPT_NAMES)
    for name in PROMPT_NAMES:
        p = load_prompt(name)
        assert p.instructions.startswith(f"envevo-role: {name} (prompt {p.tag})")
        assert versions[name].startswith(p.version + "+")


def test_default_rubrics_have_the_issue_criteria():
    plan = [c.name for c in default_rubric("plan").criteria]
    assert plan == ["realizes_direction", "feasible_offline", "verifiable_unambiguous", "difficulty_via_lever",
                    "consistent_components", "not_trivial_renaming"]
    # the task rubric (Harbor's, plus the evolution criteria): tests/llm/test_rubric_harbor.py


def test_scoring_uses_weights_and_required_criteria():
    rubric = default_rubric("plan")

    def judged(**verdicts):
        return [Judgement(name=c.name, reason="r", verdict=verdicts.get(c.name, "pass")) for c in rubric.criteria]

    assert score(rubric, judged()) == (True, 1.0)
    assert score(rubric, judged(difficulty_via_lever="n/a"))[0]
    assert not score(rubric, judged(not_trivial_renaming="fail"))[0]  # required
    ok, share = score(rubric, judged(consistent_components="fail"))
    assert ok and share == pytest.approx(7.5 / 8.5)
    assert not score(rubric, judged(consistent_components="fail", difficulty_via_lever="fail"))[0]


def test_rubric_files_load_merge_and_grow(tmp_path):
    f = tmp_path / "rubric.toml"
    append_criteria(f, [Criterion(name="logs_read_only", description="Inputs stay read-only.")])
    append_criteria(f, [Criterion(name="typos", description="Stricter typo rule.", weight=2)])
    r = load_rubric(f)
    assert [c.name for c in r.criteria] == ["logs_read_only", "typos"]
    merged = default_rubric("task").merged([r])
    assert [c.description for c in merged.criteria if c.name == "typos"] == ["Stricter typo rule."]  # Harbor's, replaced
    assert "logs_read_only" in {c.name for c in merged.criteria}
    (tmp_path / "bad.toml").write_text('[[criteria]]\nname = "Bad Name"\ndescription = "x"\n')
    with pytest.raises(UserError, match="criteria.0.name"):
        load_rubric(tmp_path / "bad.toml")
    with pytest.raises(UserError, match="cannot read rubric"):
        load_rubric(tmp_path / "nope.toml")
