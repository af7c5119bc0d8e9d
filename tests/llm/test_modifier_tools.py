"""The Modifier's tools and history: str_replace, run_tests (the verifiers' digest), trimmed observations, the
prompt's statement of the container's rules, and `--env daytona` through the runtime's sandbox session."""

import asyncio
import json
from pathlib import Path

import pytest

from envevo.evolve.engines.llm import ContainerShell, LLMEngine, ShellFacts, Workspace
from envevo.evolve.engines.llm._history import MARK, trim_history
from envevo.evolve.engines.llm._modifier_prompt import instructions
from envevo.llm import LLMRuntime, LLMSettings
from tests.fakes import log_forensics as lf
from tests.fakes.models import Calls, scripted, tool_returns
from tests.llm.test_llm_roles import _accepted, ctx, run, runtime, seed

ANCHOR = '    "exfil_ips": ["198.51.100.23", "203.0.113.77"],\n'
ADDED = '    "exfil_datasets": ["customers", "invoices", "orders"],\n'


def test_str_replace_edits_one_unique_occurrence_and_refuses_ambiguity(tmp_path):
    root = tmp_path / "task"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "t.py").write_text("a = 1\nb = 1\n")
    ws = Workspace(root)
    assert "occurs 2 times" in ws.replace("tests/t.py", " = 1", " = 2")
    assert "does not occur" in ws.replace("tests/t.py", "c = 1", "c = 2")
    assert (root / "tests" / "t.py").read_text() == "a = 1\nb = 1\n"  # nothing changed by a refused edit
    assert ws.replace("tests/t.py", "b = 1", "b = 3").startswith("edited tests/t.py at line 2")
    assert (root / "tests" / "t.py").read_text() == "a = 1\nb = 3\n"
    assert ws.replace("../x", "a", "b").startswith("error:") and ws.refused


def test_the_modifier_edits_with_str_replace_without_resending_the_file(tmp_path):
    model = scripted(Calls(("str_replace", {"path": "tests/test_outputs.py", "old_text": ANCHOR,
                                            "new_text": ANCHOR + ADDED})), {"summary": "one key more"})
    candidate = run(LLMEngine(runtime(modifier=model)).modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    assert ADDED in candidate.read_text("tests/test_outputs.py")
    assert tool_returns(model.seen[-1])[-1].startswith("edited tests/test_outputs.py")


class DigestShell:
    """A ShellSession stand-in whose run_tests answers with a digest, recording how it was asked."""

    def __init__(self, facts=None):
        self.asked, self.facts_ = [], facts or ShellFacts(timeout_sec=60, network="no-network")

    def session(self, task_dir):
        shell = self

        class Session:
            async def __aenter__(self):
                return self

            async def __aexit__(self, *exc):
                return None

            def facts(self):
                return shell.facts_

            async def run_tests(self, *, with_solution=True):
                shell.asked.append(with_solution)
                return "reward 0.0 (solve.sh exited 0)\nfailing tests (ctrf.json):\n  | test_report: KeyError"

        return Session()


def test_run_tests_returns_the_digest_and_runs_in_order_after_the_edits(tmp_path):
    model = scripted(Calls(("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()}),
                           ("run_tests", {}), ("run_tests", {"with_solution": False})), {"summary": "done"})
    shell = DigestShell()
    run(LLMEngine(runtime(modifier=model), shell=shell, modifier_verifies=False)
        .modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    assert shell.asked == [True, False]
    returns = tool_returns(model.seen[-1])
    assert returns[0].startswith("wrote solution/solve.sh") and "failing tests (ctrf.json)" in returns[1]


def test_the_prompt_states_the_containers_rules_and_the_request_budget():
    facts = ShellFacts(timeout_sec=90, network="no-network", separate_verifier=True)
    text = instructions(facts, requests=17)
    assert "State persists between your commands" in text and "/logs/verifier exists" in text
    assert "no internet access" in text and "times out after 90 s" in text
    assert "You have 17 model requests" in text and "the empty solution must score 0" in text
    assert "separate verifier environment" in text and "tests/Dockerfile" in text
    assert "{" not in text and "Text actions" not in text and "Without a shell" not in text
    assert "separate verifier" not in instructions(ShellFacts(timeout_sec=90, network="public"), requests=17)
    assert "```write PATH" in instructions(None, requests=5, text_actions=True)


def test_old_observations_are_trimmed_beyond_the_window_and_recent_ones_kept(tmp_path):
    big = "x" * 9000
    model = scripted(Calls(("write_file", {"path": "environment/big.txt", "content": big})),
                     Calls(("read_file", {"path": "environment/big.txt"})),
                     Calls(("read_file", {"path": "instruction.md"})),
                     Calls(("list_files", {})), Calls(("list_files", {})), {"summary": "done"})
    run(LLMEngine(runtime(modifier=model)).modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    # Right after the read, the model sees the whole file; two turns later only its start and end.
    assert big in tool_returns(model.seen[2])[1]
    last = model.seen[-1]
    returns = tool_returns(last)
    assert MARK in returns[1] and len(returns[1]) < 600
    assert lf.SEED.joinpath("instruction.md").read_text()[:9000] in returns[2] or MARK in returns[2]
    assert MARK not in returns[-1]  # the latest observation is whole
    # The written content of an old call is a size, not the content; the first request is untouched.
    sent = json.dumps([getattr(p, "args", None) for m in last for p in m.parts], default=str)
    assert big not in sent and "[9000 characters, sent earlier]" in sent
    assert last[0].parts[0].content == model.seen[0][0].parts[0].content


def test_trimming_is_idempotent_and_keeps_every_call_paired_with_its_result():
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    msgs = [ModelRequest(parts=[UserPromptPart("plan " * 400)])]
    for i in range(6):
        msgs.append(ModelResponse(parts=[ToolCallPart("read_file", {"path": f"f{i}"}, tool_call_id=f"c{i}")]))
        msgs.append(ModelRequest(parts=[ToolReturnPart("read_file", "y" * 5000, tool_call_id=f"c{i}")]))
    once = trim_history(msgs)
    assert trim_history(once) == once
    ids = [(p.tool_call_id, type(p).__name__) for m in once for p in m.parts if hasattr(p, "tool_call_id")]
    assert ids == [(f"c{i}", kind) for i in range(6) for kind in ("ToolCallPart", "ToolReturnPart")]
    assert once[0] == msgs[0] and once[-1] == msgs[-1] and MARK in once[2].parts[0].content


# ---- --env daytona: the shell is a runtime sandbox session on that Harbor environment ----------------------------
class FakeDaytona:
    """Records what the runtime asks of a Harbor environment registered as `daytona`; runs nothing."""

    log: list = []

    @classmethod
    def make(cls):
        from harbor.environments.base import BaseEnvironment, ExecResult
        from harbor.environments.capabilities import EnvironmentCapabilities

        class Env(BaseEnvironment):
            @staticmethod
            def type():
                return "daytona"

            @property
            def capabilities(self):
                return EnvironmentCapabilities(disable_internet=True)

            def _validate_definition(self):
                return None

            async def start(self, force_build):
                cls.log.append(("start", self.environment_dir.parent.name))

            async def stop(self, delete):
                cls.log.append(("stop", delete))

            async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
                cls.log.append(("exec", command))
                return ExecResult(stdout="hello from daytona\n", stderr="", return_code=0)

            async def upload_dir(self, source_dir, target_dir):
                cls.log.append(("upload", target_dir))

            async def upload_file(self, source_path, target_path):
                cls.log.append(("upload", target_path))

            async def download_dir(self, source_dir, target_dir):
                return None

            async def download_file(self, source_path, target_path):
                return None

        return Env


@pytest.fixture
def daytona(monkeypatch):
    from harbor.environments import factory
    from harbor.models.environment_type import EnvironmentType

    import tests.llm.test_modifier_tools as me

    me.FakeDaytonaEnvironment = FakeDaytona.make()  # importable, as Harbor's registry imports by module path
    FakeDaytona.log = []
    monkeypatch.setitem(factory._ENVIRONMENT_REGISTRY, EnvironmentType.DAYTONA,
                        factory._EnvEntry(me.__name__, "FakeDaytonaEnvironment", None))
    return FakeDaytona.log


def test_env_daytona_runs_the_modifiers_commands_through_the_runtime_session(tmp_path, daytona):
    model = scripted(Calls(("run_in_container", {"command": "ls /app"})), Calls(("run_tests", {})), {"summary": "s"},
                     name="modifier")
    engine = LLMEngine(runtime(modifier=model), shell=ContainerShell("daytona", timeout_sec=30), modifier_verifies=False)
    with pytest.raises(Exception, match="changed nothing"):  # the script edits nothing: the engine says so, no traceback
        run(engine.modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    returns = tool_returns(model.seen[-1])
    assert "hello from daytona" in returns[0] and "last 1 lines of test-stdout" in returns[1]
    execs = [c for kind, c in daytona if kind == "exec"]
    assert any("ls /app" in c for c in execs) and any("bash /tests/test.sh" in c for c in execs)
    assert ("upload", "/tests") in daytona and ("upload", "/solution") in daytona
    assert [e for e in daytona if e[0] == "start"] and daytona[-1] == ("stop", True)  # closed at the end


def test_env_daytona_without_its_sdk_is_one_line_for_the_modifier(tmp_path, monkeypatch):
    from harbor.environments import factory
    from harbor.models.environment_type import EnvironmentType

    monkeypatch.setitem(factory._ENVIRONMENT_REGISTRY, EnvironmentType.DAYTONA,
                        factory._EnvEntry("no_such_daytona_sdk_module", "X", "daytona"))
    model = scripted(Calls(("run_in_container", {"command": "ls"})),
                     Calls(("write_file", {"path": "solution/solve.sh", "content": lf.new_solution()})), {"summary": "s"})
    engine = LLMEngine(runtime(modifier=model), shell=ContainerShell("daytona"), modifier_verifies=False)
    run(engine.modify(seed(), _accepted(tmp_path), [], ctx(tmp_path)))
    said = tool_returns(model.seen[-1])[0]
    assert said.startswith("error: the container could not be started") and "harbor[daytona]" in said
    assert "\n" not in said and "Traceback" not in said


def test_a_runtime_with_text_actions_is_read_from_the_role_settings():
    from envevo.evolve.engines.llm._modify import actions_mode

    settings = LLMSettings.model_validate({"roles": {"modifier": {"actions": "text"}}})
    assert actions_mode(LLMRuntime(settings, models={})) == "text"
    assert actions_mode(LLMRuntime(LLMSettings(), models={})) == "tools"


def test_run_tests_in_a_session_reads_reward_and_ctrf_from_logs_verifier(tmp_path, monkeypatch):
    """ShellSession.run_tests over a scripted runtime session: solve.sh, test.sh, then the verifier files."""
    from envevo.evolve.engines.llm import _sandbox
    from envevo.task import load_task, save
    from tests.llm.test_llm_sandbox import FakeSandbox

    draft = save(load_task(lf.SEED), tmp_path / "draft-1")
    ctrf = {"results": {"summary": {"tests": 2, "failed": 1},
                        "tests": [{"name": "test_report", "status": "failed", "message": "KeyError: 'exfil_datasets'"}]}}

    class Scripted(FakeSandbox):
        def __call__(self, task_dir, env="podman", **kw):
            cm = super().__call__(task_dir, env, **kw)
            outer = self

            class Wrap:
                async def __aenter__(self):
                    s = await cm.__aenter__()
                    plain = s.exec

                    async def exec(command, **kw):
                        from envevo.runtime import SessionResult

                        await plain(command, **kw)
                        if "cat /logs/verifier/reward.txt" in command:
                            split = _sandbox._SPLIT
                            return SessionResult(exit_code=0, stdout=f"0\n{split}\n{split}\n{json.dumps(ctrf)}\n{split}\n")
                        if "solve.sh" in command:
                            return SessionResult(exit_code=0, stdout="wrote /app/incident/report.json\n")
                        return SessionResult(exit_code=1, stdout="1 failed, 1 passed in 0.2s\n")

                    s.exec = exec
                    outer.session_ = s
                    return s

                async def __aexit__(self, *exc):
                    return await cm.__aexit__(*exc)

            return Wrap()

    fake = Scripted()
    monkeypatch.setattr(_sandbox, "open_session", fake)

    async def main():
        async with ContainerShell("podman", timeout_sec=30).session(draft) as s:
            return await s.run_tests()

    digest = asyncio.run(main())
    assert "\nreward 0.0 (solve.sh exited 0)\n" in digest and "separate verifier environment" in digest
    assert "test_report: KeyError: 'exfil_datasets'" in digest and "1 failed, 1 passed" in digest
    assert "wrote /app/incident/report.json" in digest
    uploads = [target for _, target, _ in fake.uploads]
    assert uploads == ["/solution", "/tests"]
    assert Path(draft).is_dir()


def test_a_session_on_a_cloud_environment_takes_a_slot_of_the_runs_sandbox_quota(daytona):
    # --max-sandboxes caps every sandbox of a run: the Modifier's shell and the red team's sessions count too.
    from envevo.runtime import open_session, set_quota

    limiter = set_quota(max_sandboxes=1)
    try:
        async def main():
            async with open_session(lf.SEED, "daytona") as session:
                assert limiter.alive == 1
                await session.exec("true")

        run(main())
        assert limiter.alive == 0 and limiter.starts == 1 and limiter.peak == 1
        assert [e for e in daytona if e[0] == "start"] and daytona[-1] == ("stop", True)
    finally:
        set_quota()
