"""Quotas, provider backoff and backpressure, against a fake remote Harbor environment (latency, 429s, a
provider-side quota, dropped connections; no containers): `--max-sandboxes` caps sandboxes alive at once,
`--start-rate` spaces starts, and a provider pushing back costs time, never a verdict."""

import asyncio

import pytest

from envevo.catalog import random_chain
from envevo.evolve.engines.procedural import compose
from envevo.runtime import Backoff, ErrorKind, TrialSpec, is_provider_error, run_trials, set_quota
from envevo.task import save
from tests.fakes.remote_env import FakeRemoteEnvironment as Fake

ENV = "tests.fakes.remote_env:FakeRemoteEnvironment"
FAST = Backoff(base=0.02, cap=0.1, attempts=30)


@pytest.fixture
def task_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_REMOTE_LATENCY", "0.02")
    Fake.reset()
    yield save(compose(random_chain(None, 2, 1)), tmp_path / "task")
    set_quota()  # the process's default again: no quota


def trials(task_dir, tmp_path, n=6):
    agents = ["oracle", "nop"] * (n // 2)
    specs = [TrialSpec(task_dir=task_dir, agent=a, env=ENV, trials_dir=tmp_path / "trials", trial_name=f"t{i}")
             for i, a in enumerate(agents)]
    return asyncio.run(run_trials(specs, concurrency=n, retries=0))


def assert_honest_verdicts(outcomes):
    """Every oracle run scored 1 and every empty run 0: no fault became a fail or a pass."""
    assert [o.error_kind for o in outcomes] == [ErrorKind.OK] * len(outcomes), [o.error_message for o in outcomes]
    assert [o.reward for o in outcomes] == [1.0, 0.0] * (len(outcomes) // 2)


def test_max_sandboxes_caps_what_is_alive_at_once(task_dir, tmp_path):
    limiter = set_quota(max_sandboxes=2, backoff=FAST)
    assert_honest_verdicts(trials(task_dir, tmp_path, 8))
    assert Fake.peak == 2 and limiter.peak == 2
    # The procedural task has a separate verifier sandbox: it counts too.
    assert len(Fake.starts) == 16


def test_without_a_quota_the_same_trials_run_wider(task_dir, tmp_path):
    set_quota(backoff=FAST)
    assert_honest_verdicts(trials(task_dir, tmp_path, 8))
    assert Fake.peak > 2


def test_start_rate_spaces_sandbox_starts(task_dir, tmp_path):
    set_quota(start_rate=20, backoff=FAST)
    assert_honest_verdicts(trials(task_dir, tmp_path, 6))
    gaps = [b - a for a, b in zip(Fake.starts, Fake.starts[1:], strict=False)]
    assert len(Fake.starts) == 12
    assert min(gaps) >= 0.05 - 0.005  # 1/20 s, less the timer's slack


def test_provider_quota_and_429s_are_retried_with_backoff(task_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_REMOTE_QUOTA", "2")  # the provider refuses a third sandbox with a 429
    set_quota(backoff=FAST)
    assert_honest_verdicts(trials(task_dir, tmp_path, 8))
    assert Fake.refused > 0 and Fake.peak <= 2


def test_max_sandboxes_within_the_providers_quota_gets_no_429(task_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_REMOTE_QUOTA", "2")
    set_quota(max_sandboxes=2, backoff=FAST)
    assert_honest_verdicts(trials(task_dir, tmp_path, 8))
    assert Fake.refused == 0


def test_dropped_connections_are_infrastructure_retried_never_a_fail(task_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_REMOTE_DROP_AT", "2")  # the oracle's run of the solution, the empty agent's check
    set_quota(backoff=FAST)
    assert_honest_verdicts(trials(task_dir, tmp_path, 6))
    assert Fake.dropped == 6  # one per trial


def test_a_provider_that_never_recovers_is_an_infrastructure_error(task_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_REMOTE_START_429", "1")
    set_quota(backoff=Backoff(base=0.01, cap=0.02, attempts=3))
    outcomes = trials(task_dir, tmp_path, 2)
    assert {o.error_kind for o in outcomes} == {ErrorKind.INFRASTRUCTURE_ERROR}
    assert Fake.refused == 2 * 4  # each start: the first try and three retries


@pytest.mark.parametrize("kind, message, provider", [
    ("ProviderError", "boom", True),
    ("RuntimeError", "HTTP 429 Too Many Requests", True),
    ("RuntimeError", "503 Service Unavailable", True),
    ("OSError", "Connection reset by peer", True),
    ("RuntimeError", "sandbox quota exceeded", True),
    ("RuntimeError", "podman run failed: no such image", False),
    ("AssertionError", "expected 4290 rows", False),
])
def test_provider_errors_are_told_apart(kind, message, provider):
    assert is_provider_error(kind, message) is provider
