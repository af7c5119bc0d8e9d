"""A token cap for the model calls outside lineages (issue 36): `verify`, `audit` and `seeds select` take --max-tokens
(evolve's option name and meaning: input + output tokens, checked before each request); a seed's attack and every
call of a verification command are under it. Before, only a lineage's calls had a cap. Reaching it: no further call,
the attack that needed it is inconclusive, and the command ends with one line saying what was spent and how to raise
it."""

from __future__ import annotations

import asyncio
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.llm import BudgetExceeded, LLMRuntime, LLMSettings
from envevo.llm import _hacker as hacker_module
from envevo.llm._hacker import LLMHacker
from envevo.task import load_task
from envevo.verify import Verdict, VerifierReport
from tests.conftest import FIXTURES
from tests.fakes.models import scripted
from tests.fakes.openai_server import FakeOpenAI, Script, final
from tests.llm.test_llm_guard import ask

runner = CliRunner()


def test_the_calls_outside_lineages_are_one_budget_under_the_same_cap():
    model = scripted({"ok": True}, {"ok": True}, {"ok": True})
    rt = LLMRuntime(LLMSettings(max_tokens=10), models={"judge": model})
    ask(rt, lineage=None)  # the first call is allowed and crosses the cap
    with pytest.raises(BudgetExceeded, match=r"the model calls outside lineages used \d+ tokens, reaching its cap of "
                                             r"10 \(--max-tokens\)"):
        ask(rt, lineage=None)
    assert len(model.queue) == 2  # that request never reached the model
    ask(rt, lineage="lin")  # a lineage keeps its own budget


@pytest.fixture
def two_tasks(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    for name in ("task-a", "task-b"):
        shutil.copytree(FIXTURES / "runtime" / "hello", root / name)
    return root


@pytest.fixture
def hacker_without_sandbox(monkeypatch):
    """`verify` with the real LLM hacker on the command's model, and no container: the hacker's shell is never used
    (the scripted model answers at once) and its hack is never replayed (it finds none)."""
    attacks = []

    @asynccontextmanager
    async def session(task_dir, env, logs_dir=None):
        yield object()

    def lend(*args, runtime=None, **kw):
        lent.append(runtime)
        return []

    async def verify_tasks(tasks, trials_dir, **kw):
        (runtime,) = lent
        verdicts = []
        for name, d in tasks:  # one after another: the second attack starts over the cap
            attack = await LLMHacker(runtime=runtime).attack(load_task(d), d, "podman", trials_dir, asyncio.Semaphore(1))
            attacks.append(attack)
            red = VerifierReport(name="red_team", passed=attack.error is None, inconclusive=attack.error is not None,
                                 reasons=[f"llm_hacker: inconclusive: {attack.error}"] if attack.error else [])
            verdicts.append(Verdict(task=name, task_dir=d, ok=red.passed, reports={"red_team": red} | {
                n: VerifierReport(name=n, passed=True) for n in ("oracle", "invalid_test")}))
        return verdicts

    lent: list = []
    monkeypatch.setattr(hacker_module, "open_session", session)
    monkeypatch.setattr("envevo.llm.verifiers_with_model", lend)
    monkeypatch.setattr("envevo.verify.verify_tasks", verify_tasks)
    monkeypatch.setattr("envevo.sandbox.runnable_copy", lambda task, env, mapping, dest: (task.source, []))
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    return attacks


def test_verify_stops_asking_its_model_at_max_tokens_and_says_so_in_one_line(two_tasks, hacker_without_sandbox, tmp_path):
    script = Script(hacker=[final({"found": False, "summary": "nothing reachable"}),
                            final({"found": False, "summary": "never asked"})])
    with FakeOpenAI(script) as server, override_allow_model_requests(True):
        result = runner.invoke(app, ["verify", str(two_tasks), "--red-team", "on", "--mutation", "off", "--repeats", "1",
                                     "--model", "openai:fake-model", "--base-url", server.url, "--api-key-env", "PATH",
                                     "--max-tokens", "1", "--jobs-dir", str(tmp_path / "jobs")])
    first, second = hacker_without_sandbox
    assert first.error is None and first.summary == "nothing reachable" and first.model_calls == 1
    assert second.error is not None and second.model_calls == 0
    assert "did not run: the model calls outside lineages used" in second.error and "cap of 1 (--max-tokens)" in second.error
    assert script.remaining() == {"hacker": 1}  # the second attack never reached the model
    stop = [line for line in result.output.splitlines() if line.startswith("model calls stopped:")]
    assert len(stop) == 1, result.output
    assert "reaching its cap of 1 (--max-tokens)" in stop[0] and "raise --max-tokens" in stop[0]
    assert result.exit_code == 3, result.output  # an attack the cap stopped is inconclusive, never a pass


def test_a_token_cap_nothing_uses_is_refused(two_tasks, tmp_path):
    verify = runner.invoke(app, ["verify", str(two_tasks), "--red-team", "off", "--max-tokens", "5",
                                 "--jobs-dir", str(tmp_path / "jobs")])
    assert verify.exit_code == 2 and "--max-tokens is used here by the red team's LLM hacker" in verify.output
    select = runner.invoke(app, ["seeds", "select", str(two_tasks), "--run", str(tmp_path / "run"), "--no-verify",
                                 "--max-tokens", "5"])
    assert select.exit_code == 2 and "--max-tokens is for the verifiers, and --no-verify runs none" in select.output
    assert not (tmp_path / "jobs").exists()
