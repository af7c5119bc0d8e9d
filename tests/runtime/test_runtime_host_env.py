"""The runtime hands Harbor no host variable the user did not pass (issue 36 item 8): a task naming one is refused
before Harbor sees it; a passed one reaches Harbor only as a literal in a private copy, removed after the trial."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from envevo.runtime import ErrorKind, TrialSpec
from envevo.runtime import _trial as trial_mod
from envevo.task import PASS_ENV_VAR


def _task(tmp_path: Path) -> Path:
    task = tmp_path / "leaky"
    task.mkdir()
    (task / "task.toml").write_text('[environment]\nenv = { KEY = "${OPENAI_API_KEY}" }\n')
    return task


def test_a_variable_not_passed_is_refused_before_harbor(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.delenv(PASS_ENV_VAR, raising=False)

    def no_harbor(spec):
        raise AssertionError("Harbor was handed the task")

    monkeypatch.setattr(trial_mod, "trial_config", no_harbor)
    spec = TrialSpec(task_dir=_task(tmp_path), agent="oracle", trials_dir=tmp_path / "trials")
    outcome = asyncio.run(trial_mod.run_trial(spec))
    assert outcome.error_kind is ErrorKind.INFRASTRUCTURE_ERROR and outcome.exception_type == "HostEnvRefused"
    assert "--pass-env OPENAI_API_KEY" in outcome.error_message and "sk-host-secret" not in outcome.error_message


def test_a_passed_variable_reaches_harbor_as_a_literal_in_a_private_copy(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-passed")
    monkeypatch.setenv(PASS_ENV_VAR, "OPENAI_API_KEY")
    seen = {}

    def harbor_config(spec):
        seen["dir"] = spec.task_dir
        seen["config"] = tomllib.loads((spec.task_dir / "task.toml").read_text())
        raise RuntimeError("stop here")

    monkeypatch.setattr(trial_mod, "trial_config", harbor_config)
    task = _task(tmp_path)
    spec = TrialSpec(task_dir=task, agent="oracle", trials_dir=tmp_path / "trials")
    assert "stop here" in asyncio.run(trial_mod.run_trial(spec)).error_message
    assert seen["dir"] != task and seen["dir"].name == "leaky"
    assert seen["config"]["environment"]["env"] == {"KEY": "sk-passed"}
    assert not seen["dir"].exists()  # the copy holding the value is gone after the trial


def test_trial_logs_and_run_dirs_are_private(tmp_path, monkeypatch) -> None:
    import stat

    from envevo.store import LineageStore

    monkeypatch.setattr(trial_mod, "trial_config", lambda spec: (_ for _ in ()).throw(RuntimeError("stop")))
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "task.toml").write_text("[environment]\n")
    spec = TrialSpec(task_dir=tmp_path / "plain", agent="oracle", trials_dir=tmp_path / "jobs" / "trials")
    asyncio.run(trial_mod.run_trial(spec))
    assert stat.S_IMODE((tmp_path / "jobs" / "trials").stat().st_mode) == 0o700
    LineageStore.open(tmp_path / "run").close()
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o700
