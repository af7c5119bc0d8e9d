"""A host variable reaches no container unless passed (issue 36 item 8), in a real sandbox: the oracle of a task that
asks for ENVEVO_TEST_SECRET (with a default) sees the default in the agent's container, the solution's and the
tests' environments while the host holds a value; passed, the value arrives (so the check can fail). 2 trials."""

import asyncio

import pytest

from envevo.runtime import ErrorKind, TrialSpec, run_trials
from envevo.task import PASS_ENV_VAR
from tests.conftest import FIXTURES

pytestmark = pytest.mark.sandbox


def test_the_hosts_value_reaches_no_container_unless_passed(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVEVO_TEST_SECRET", "sk-envevo-test-secret")
    task = FIXTURES / "runtime" / "host-env"
    spec = TrialSpec(task_dir=task, agent="oracle", env=sandbox, trials_dir=tmp_path / "kept")
    monkeypatch.delenv(PASS_ENV_VAR, raising=False)
    (kept,) = asyncio.run(run_trials([spec]))
    assert kept.error_kind is ErrorKind.OK and kept.reward == 1.0
    monkeypatch.setenv(PASS_ENV_VAR, "ENVEVO_TEST_SECRET")
    (passed,) = asyncio.run(run_trials([spec.model_copy(update={"trials_dir": tmp_path / "passed"})]))
    assert passed.error_kind is ErrorKind.OK and passed.reward == 0.0
    leaked = [p for p in (tmp_path / "kept").rglob("*") if p.is_file() and b"sk-envevo-test" in p.read_bytes()]
    assert leaked == []  # nor in the trial's logs
