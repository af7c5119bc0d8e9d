"""A task whose task.toml asks the host for a variable the user did not pass (--pass-env) is named before any trial:
inconclusive, never a fail; the fix names --pass-env."""

import asyncio

import pytest

from envevo.runtime import set_trial_runner
from envevo.task import host_env_needs
from envevo.verify import verify_tasks

CONFIG = """
[verifier]
env = { ANTHROPIC_API_KEY = "${ANTHROPIC_API_KEY}", MODEL = "${JUDGE_MODEL:-haiku}", LITERAL = "x" }

[solution]
env = { TOKEN = "${SOLVER_TOKEN}" }
"""


def test_needs_are_templates_without_a_default_not_passed_or_unset():
    config = {"verifier": {"env": {"A": "${ANTHROPIC_API_KEY}", "M": "${JUDGE_MODEL:-haiku}", "L": "lit", "P": "pre${X}"}},
              "steps": [{"verifier": {"env": {"B": "${ANTHROPIC_API_KEY}"}}}], "environment": {"env": {"E": "${E}"}}}
    needs = host_env_needs(config, {})
    assert [(n.phase, n.var) for n in needs] == [("verifier", "ANTHROPIC_API_KEY"), ("environment", "E")]
    # Set on the host is not enough: a task reads only the variables the user passed.
    host = {"ANTHROPIC_API_KEY": "", "E": "1"}
    assert [n.var for n in host_env_needs(config, host)] == ["ANTHROPIC_API_KEY", "E"]
    assert host_env_needs(config, host, passed={"ANTHROPIC_API_KEY", "E"}) == []  # set counts, even empty
    (unset,) = host_env_needs(config, {"ANTHROPIC_API_KEY": "k"}, passed={"ANTHROPIC_API_KEY", "E"})
    assert unset.var == "E" and unset.passed


@pytest.fixture
def no_trials():
    async def runner(*_a, **_k):
        raise AssertionError("a trial ran")

    set_trial_runner(runner)  # type: ignore[arg-type]
    yield
    set_trial_runner(None)


def test_the_verdict_is_inconclusive_and_names_the_variable(tmp_path, monkeypatch, no_trials):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-host-secret")  # on the host, but not passed
    monkeypatch.delenv("SOLVER_TOKEN", raising=False)
    task = tmp_path / "judged"
    task.mkdir()
    (task / "task.toml").write_text(CONFIG)
    (verdict,) = asyncio.run(verify_tasks([("judged", task)], tmp_path / "trials"))
    assert verdict.status == "inconclusive" and not verdict.ok
    assert str(verdict.unmet) == "the verifier needs ANTHROPIC_API_KEY; the solution needs SOLVER_TOKEN"
    assert verdict.reasons[0].startswith("inconclusive: the verifier needs ANTHROPIC_API_KEY")
    assert all(r.inconclusive and not r.passed for r in verdict.reports.values())
    summary = verdict.summary()
    assert summary["status"] == "inconclusive" and summary["unmet"]["reason"].startswith("the verifier needs")
    assert summary["unmet"]["fix"].startswith("--pass-env ANTHROPIC_API_KEY --pass-env SOLVER_TOKEN")
    assert "sk-host-secret" not in str(summary)
