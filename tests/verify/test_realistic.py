"""Tasks written the way third parties write them verify, or fail for the right reason, as a user would see it.

`make test` runs `envevo doctor --fix --tasks tests/fixtures/realistic` first, which builds the stand-ins for the
base images no registry here serves; this test runs doctor again (seconds when they exist) and then the CLI.
"""

import json
import os

import pytest

from envevo.sandbox import builder_knows_heredocs
from tests.conftest import FIXTURES, run_cli

pytestmark = pytest.mark.sandbox

REALISTIC = FIXTURES / "realistic"
SOUND = {"no-network", "python-slim", "digest-pinned", "ubuntu", "crlf", "compose", "separate-verifier", "tb2-canonical",
         "heredoc", "plain-name", "tls-pip",  # tls-pip: pip over HTTPS at build; behind a proxy, ok once doctor --fix trusts it
         "tb-base", "golang", "uv-copy", "node"}
STAND_INS = {"python-slim": "Python 3.13", "digest-pinned": "debian:bookworm-slim", "ubuntu": "Debian", "compose": "Python 3.13",
             "tb2-canonical": "Python 3.13", "plain-name": '"local/plain-name"',
             "tb-base": "tmux 3.", "golang": "Go 1.24", "uv-copy": "uv 0.9.26", "node": "Node.js 20"}
# Issue 36's fixtures have their own modules: one oracle run each (tests/verify/test_offline_fixtures.py), and the
# near-miss ones with the mutation verifier on (tests/verify/test_equivalent_mutants_sandbox.py).
OFFLINE = ("model-hub", "pinned-wheel", "tls-clients", "phase-network", "uv-installer",
           "cleanup-tail", "chmod-interpreter", "partial-output")
if not builder_knows_heredocs("podman"):
    STAND_INS["heredoc"] = "rewrote 4 BuildKit heredocs for podman"


@pytest.fixture(scope="module")
def verdicts(sandbox, tmp_path_factory):
    doctor = run_cli("doctor", "--fix", "--tasks", str(REALISTIC), "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    # The sandbox layer's verdicts, so the red team off. With it on (the default), measured 1 Dec 2026: the tasks that
    # test in the agent's container fail (reward_forgery breaks them, missing-runner included, which turns
    # inconclusive → fail); separate-verifier and compose stayed ok; compose now fails by construction (the static
    # shared_compose exploit: its tests share the agent's container). tests/verify/test_redteam.py covers the red team.
    # verifier-env's verifier needs ANTHROPIC_API_KEY: this host must not have it.
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    # The mutation verifier off too: tests/verify/test_mutation.py covers it. One oracle run each, as in
    # test_offline_fixtures.py: what is tested here is how each image and layout is built and run, the same for a second
    # run in a fresh container (the repeats themselves: tests/cli/test_cli_verify.py::test_every_seed_is_sound).
    tasks = [str(d) for d in sorted(REALISTIC.iterdir()) if d.is_dir() and d.name not in OFFLINE]
    proc = run_cli("verify", *tasks, "--repeats", "1", "--red-team", "off", "--mutation", "off", "--json",
                   "--jobs-dir", str(tmp_path_factory.mktemp("jobs")),
                   env=env)
    assert proc.returncode == 1, proc.stderr  # the broken ones make the run fail
    return {v["task"]: v for v in json.loads(proc.stdout)}


def test_every_fixture_gets_a_verdict(verdicts):
    assert set(verdicts) == SOUND | {"missing-runner", "wrong-expected", "verifier-env"}


@pytest.mark.parametrize("task", sorted(SOUND))
def test_sound_tasks_verify(verdicts, task):
    v = verdicts[task]
    assert v["status"] == "ok", json.dumps({k: v[k]["reasons"] for k in ("oracle", "invalid_test")}, indent=1)


@pytest.mark.parametrize("task, stated", sorted(STAND_INS.items()))
def test_substitutions_are_stated(verdicts, task, stated):
    subs = verdicts[task]["substitutions"]
    assert subs and any(stated in s for s in subs), subs


def test_a_verifier_that_needs_a_host_variable_is_inconclusive_before_any_trial(verdicts):
    v = verdicts["verifier-env"]
    assert v["status"] == "inconclusive" and not v["ok"]
    assert v["unmet"]["reason"] == "the verifier needs ANTHROPIC_API_KEY"
    assert not v["oracle"]["passed"] and v["oracle"]["inconclusive"] and not v["oracle"]["runs"]


def test_a_runner_that_never_ran_is_inconclusive_never_a_pass(verdicts):
    v = verdicts["missing-runner"]
    assert v["status"] == "inconclusive" and not v["ok"]
    assert not v["invalid_test"]["passed"] and v["invalid_test"]["inconclusive"]
    reason = v["invalid_test"]["reasons"][0]
    # uv itself is served from PyPI's wheel now (stated); its test-time `uvx pytest` has no network here.
    assert "never ran" in reason and "no network" in reason and "logs:" in reason
    assert any("uv 0.9.5 from PyPI" in s for s in v["substitutions"]) or "command not found" in reason


def test_a_wrong_test_fails_the_oracle_quoting_the_assertion(verdicts):
    v = verdicts["wrong-expected"]
    assert v["status"] == "fail" and not v["oracle"]["passed"] and not v["oracle"]["inconclusive"]
    reason = v["oracle"]["reasons"][0]
    assert "scored 0.0" in reason and "AssertionError" in reason and "logs:" in reason


def test_an_unpullable_base_fails_with_how_to_provide_it(sandbox, tmp_path):
    proc = run_cli("verify", str(FIXTURES / "unpullable" / "ghcr-base"), "--repeats", "1", "--json", "--jobs-dir", str(tmp_path))
    assert proc.returncode == 3, proc.stderr  # inconclusive, this host's limit: the exit code says so (docs/cli.md)
    (v,) = json.loads(proc.stdout)
    # A base this host cannot pull is a machine limit: no test ran, so inconclusive, never a fail (issue 27).
    assert v["status"] == "inconclusive" and not v["ok"]
    reason = v["oracle"]["reasons"][0]
    assert "environment_build_failure" in reason and "ghcr.io/example-org/log-tools:1.4.2" in reason
    assert "envevo doctor --fix" in reason and "--image-map" in reason and "logs:" in reason
