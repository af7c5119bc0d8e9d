"""No host environment in tasks by default (issue 36 item 8): a ``${VAR}`` in task.toml resolves only for a name the
user passed; ``${VAR:-default}`` not passed is its default, never the host's value; anything else is refused naming
the variable and the fix; Harbor is handed a private copy that holds literal values only."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest

from envevo.errors import TaskError
from envevo.task import (
    PASS_ENV_VAR,
    host_env_refs,
    host_env_resolved,
    pass_env_in_config,
    pass_host_env,
    passed_names,
    resolve_host_env,
)

CONFIG = {
    "environment": {"env": {"KEY": "${OPENAI_API_KEY}", "MODE": "${MODE:-fast}", "LIT": "x"}},
    "verifier": {"env": {"J": "${JUDGE_KEY}"}, "environment": {"env": {"V": "${V:-v}"}}},
    "solution": {"env": {"S": "${S:-s}"}},
    "steps": [{"name": "one", "verifier": {"env": {"T": "${STEP_KEY:-t}"}}}],
}
HOST = {"OPENAI_API_KEY": "sk-host-openai", "JUDGE_KEY": "sk-host-judge", "MODE": "host-mode", "V": "host-v",
        "S": "host-s", "STEP_KEY": "host-step"}


def test_every_env_table_is_read() -> None:
    assert sorted(var for _, _, var, _ in host_env_refs(CONFIG)) == ["JUDGE_KEY", "MODE", "OPENAI_API_KEY", "S",
                                                                        "STEP_KEY", "V"]


def test_a_variable_not_passed_is_refused_naming_it_and_the_fix() -> None:
    with pytest.raises(TaskError) as e:
        resolve_host_env(CONFIG, HOST, passed={"JUDGE_KEY"})
    assert "OPENAI_API_KEY" in str(e.value) and "--pass-env OPENAI_API_KEY" in str(e.value)
    assert "sk-host" not in str(e.value)


def test_only_passed_names_take_the_hosts_value_and_defaults_never_do() -> None:
    resolved = resolve_host_env(CONFIG, HOST, passed={"OPENAI_API_KEY", "JUDGE_KEY"})
    assert resolved["environment"]["env"] == {"KEY": "sk-host-openai", "MODE": "fast", "LIT": "x"}
    assert resolved["verifier"]["env"] == {"J": "sk-host-judge"}
    assert resolved["verifier"]["environment"]["env"] == {"V": "v"}
    assert resolved["solution"]["env"] == {"S": "s"} and resolved["steps"][0]["verifier"]["env"] == {"T": "t"}
    assert resolve_host_env(CONFIG, HOST, passed={"OPENAI_API_KEY", "JUDGE_KEY", "MODE"})["environment"]["env"][
        "MODE"] == "host-mode"


def test_a_default_that_is_itself_a_template_is_refused() -> None:
    with pytest.raises(TaskError, match="another template"):
        resolve_host_env({"environment": {"env": {"X": "${A:-${OPENAI_API_KEY}}"}}}, HOST, passed=set())


def test_harbor_gets_a_private_copy_with_literal_values(tmp_path: Path, monkeypatch) -> None:
    task = tmp_path / "t"
    (task / "tests").mkdir(parents=True)
    (task / "tests" / "test.sh").write_text("true\n")
    (task / "task.toml").write_text('[environment]\nenv = { KEY = "${OPENAI_API_KEY}", MODE = "${MODE:-fast}" }\n')
    for k, v in HOST.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv(PASS_ENV_VAR, raising=False)
    with pytest.raises(TaskError, match="--pass-env OPENAI_API_KEY"):
        host_env_resolved(task, tmp_path / "private")
    monkeypatch.setenv(PASS_ENV_VAR, "OPENAI_API_KEY")
    copy = host_env_resolved(task, tmp_path / "private")
    assert copy.name == "t" and copy != task and (copy / "tests" / "test.sh").is_file()
    assert tomllib.loads((copy / "task.toml").read_text())["environment"]["env"] == {"KEY": "sk-host-openai",
                                                                                     "MODE": "fast"}
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((copy / "task.toml").stat().st_mode) == 0o600
    assert "${OPENAI_API_KEY}" in (task / "task.toml").read_text()  # the task itself is untouched
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "task.toml").write_text('[environment]\nenv = { A = "b" }\n')
    assert host_env_resolved(plain, tmp_path / "private") == plain  # nothing to resolve: no copy


def test_passed_names_come_from_the_flag_and_envevo_toml(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(PASS_ENV_VAR, raising=False)
    assert passed_names() == frozenset()
    cfg = tmp_path / "envevo.toml"
    cfg.write_text('[sandbox]\npass_env = ["HF_TOKEN"]\n')
    pass_host_env(["OPENAI_API_KEY", *pass_env_in_config(cfg)])
    assert passed_names() == {"OPENAI_API_KEY", "HF_TOKEN"}
    with pytest.raises(TaskError, match="not a variable name"):
        pass_host_env(["A=B"])
    cfg.write_text('[sandbox]\npass_env = "HF_TOKEN"\n')
    with pytest.raises(TaskError, match="must be a list"):
        pass_env_in_config(cfg)
