"""The Modifier's shell (one sandbox session per candidate draft), and end to end, for real: one LLM-engine generation
of the log-forensics seed against a local fake
OpenAI-compatible server, with the Modifier's commands and the oracle and invalid-test verifiers in podman.

The scripted model answers what a capable model would (tests/fakes/log_forensics.py): ξ_E with evidence, a
length plan that the Reviewer rejects once and then accepts, Modifier tool calls that add a dependent fourth
step to instruction, tests and solution (checking the logs and running the new solution in the container), and
the Modifier's own verifier run, the judge's verdicts. The candidate must pass the real verifiers and be stored as generation 1.
The shell's own unit tests run over a fake `open_session`; its sandbox test runs one real session.
"""

import asyncio
import contextlib
import json
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import ContainerShell, ShellError, _sandbox, build_llm_engine
from envevo.evolve.engines.llm._modify import instructions
from envevo.llm import LLMSettings
from envevo.store import LineageStore
from envevo.task import load_task, save
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, role_of


@pytest.mark.sandbox
def test_one_llm_generation_of_log_forensics_is_verified_in_containers_and_stored(sandbox, tmp_path):
    script = lf.openai_script(run_verifiers=True)
    with FakeOpenAI(script) as server:
        settings = LLMSettings(model="openai:fake-model", base_url=server.url, timeout_sec=30)
        engine, checks = build_llm_engine(settings, env=sandbox)
        store = LineageStore.open(tmp_path / "run")
        engine.attach_store(store)
        cfg = EvolveConfig(engine="llm", generations=1, seed=2, repeats=1, trial_concurrency=3, env=sandbox)

        async def main():
            await engine.preflight()
            lids = await start_lineages(store, [("log-forensics", load_task(lf.SEED))], engine, cfg, checks=checks)
            assert lids == ["log-forensics"], store.lineage("log-forensics").reason
            return await evolve(store, lids, engine, cfg, checks=checks)

        with override_allow_model_requests(True):
            statuses = asyncio.run(main())

    assert statuses == {"log-forensics": "done"}, store.lineage("log-forensics").reason
    assert script.remaining() == {}
    v1 = store.version("log-forensics", 1)
    assert v1 is not None and v1.verified and v1.direction == "length" and v1.L == 4
    assert {"instruction", "verification", "solution"} <= set(v1.mutated)
    assert v1.D_T > store.version("log-forensics", 0).D_T

    (candidate,) = store.candidates("log-forensics", 1)
    reports = {r.verifier: r for r in store.verifications(candidate.id)}
    assert {k: r.passed for k, r in reports.items()} == {"oracle": True, "invalid_test": True, "rubric": True,
                                                        "realizes_plan": True, "red_team": True, "mutation": True,
                                                        "drift": True}

    task = store.load_version_task(v1.task_hash)
    assert f'"exfil_datasets": {json.dumps(lf.NEW_KEYS["exfil_datasets"])}' in task.read_text("tests/test_outputs.py")
    assert "last_exfil_utc" in task.read_text("instruction.md")
    # The Modifier saw real container output: the app log, and the new solution's report.
    results = [m["content"] for r in server.requests if role_of(r) == "modifier"
               for m in r["messages"] if m.get("role") == "tool"]
    assert any('"event": "export"' in c for c in results)
    assert any('"last_exfil_utc": "2024-03-13T20:16:17Z"' in c for c in results)
    assert any("would escape the task directory" in c for c in results)
    assert results[-1].startswith("PASSED")  # the Modifier's own run of the oracle and invalid-test verifiers
    # The hacker's attack on the candidate is billed to the lineage (its budget covers it).
    assert {t.role for t in store.usage_totals("log-forensics")} == {"proposer", "reviewer", "modifier", "judge",
                                                                      "hacker"}
    store.close()


# ---- the Modifier's shell: one sandbox session per draft --------------------------------------------------------
class FakeSandbox:
    """Stands in for envevo.runtime.open_session: records opens, closes, commands and uploads."""

    def __init__(self, fail_start: str | None = None):
        self.opened, self.closed, self.commands, self.uploads = [], [], [], []
        self.fail_start = fail_start

    def __call__(self, task_dir, env="podman", **kw):
        fake = self

        @contextlib.asynccontextmanager
        async def session():
            from envevo.runtime import SessionError, SessionResult

            if fake.fail_start:
                raise SessionError(fake.fail_start)
            n = len(fake.opened)
            fake.opened.append((Path(task_dir), env))

            class Session:
                async def exec(self, command, **kw):
                    fake.commands.append((n, command, kw))
                    return SessionResult(exit_code=0, stdout=f"ran in #{n}\n")

                async def upload(self, source, target):
                    files = {p.relative_to(source).as_posix(): p.read_text() for p in Path(source).rglob("*") if p.is_file()}
                    fake.uploads.append((n, target, files))

            try:
                yield Session()
            finally:
                fake.closed.append(n)

        return session()


@pytest.fixture
def draft(tmp_path):
    return save(load_task(lf.SEED), tmp_path / "draft-1")


def test_one_session_per_draft_keeps_its_container_until_the_environment_changes(monkeypatch, draft):
    fake = FakeSandbox()
    monkeypatch.setattr(_sandbox, "open_session", fake)
    shell = ContainerShell("daytona", timeout_sec=30)

    async def main():
        async with shell.session(draft) as s:
            first = await s.run("echo 1 > /tmp/state")
            second = await s.run("cat /tmp/state", timeout_sec=600)  # capped at the shell's timeout
            assert fake.opened == [(draft, "daytona")] and fake.closed == []
            (draft / "environment" / "extra.txt").write_text("changed")
            third = await s.run("cat /tmp/state")
            return first, second, third

    first, second, third = asyncio.run(main())
    assert "ran in #0" in first.output and not first.note and "ran in #0" in second.output
    assert "ran in #1" in third.output and "fresh container" in third.summary()
    assert fake.closed == [0, 1]  # the old one when the environment changed, the new one at the end
    commands = [c for _, c, _ in fake.commands if "mkdir -p /logs/verifier" not in c]
    assert len(commands) == 3 and all("timeout -k" in c for c in commands)
    assert "timeout -k 5 30 bash -c 'cat /tmp/state'" in commands[1]


def test_solution_and_tests_are_fresh_copies_each_time(monkeypatch, draft):
    fake = FakeSandbox()
    monkeypatch.setattr(_sandbox, "open_session", fake)

    async def main():
        async with ContainerShell().session(draft) as s:
            await s.run("ls /solution", upload_solution=True)
            (draft / "solution" / "solve.sh").write_text("echo edited\n")
            (draft / "solution" / "helper.py").write_text("print(1)\n")
            await s.run("ls /solution /tests", upload_solution=True, upload_tests=True)
            await s.run("ls /")

    asyncio.run(main())
    (_, t1, first), (_, t2, second), (_, t3, tests) = fake.uploads
    assert (t1, t2, t3) == ("/solution", "/solution", "/tests")
    assert "edited" not in first["solve.sh"] and second["solve.sh"] == "echo edited\n" and "helper.py" in second
    assert "test.sh" in tests
    removes = [c for _, c, kw in fake.commands if c.startswith("rm -rf")]
    assert removes == ["rm -rf /solution", "rm -rf /solution", "rm -rf /tests"]  # the previous copy goes first


def test_a_failing_start_is_one_error_line_and_nothing_stays_open(monkeypatch, draft):
    fake = FakeSandbox(fail_start="building environment failed: E: Unable to locate package nope")
    monkeypatch.setattr(_sandbox, "open_session", fake)

    async def main():
        async with ContainerShell().session(draft) as s:
            with pytest.raises(ShellError, match="Unable to locate package"):
                await s.run("true")

    asyncio.run(main())
    assert fake.opened == [] and fake.closed == []


def test_the_session_closes_on_error_and_on_cancellation(monkeypatch, draft):
    fake = FakeSandbox()
    monkeypatch.setattr(_sandbox, "open_session", fake)

    async def failing():
        async with ContainerShell().session(draft) as s:
            await s.run("true")
            raise RuntimeError("the Modifier's run failed")

    with pytest.raises(RuntimeError):
        asyncio.run(failing())
    assert fake.closed == [0]

    async def cancelled():
        async with ContainerShell().session(draft) as s:
            await s.run("true")
            task = asyncio.create_task(asyncio.sleep(60))
            asyncio.get_running_loop().call_later(0.05, task.cancel)
            await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())
    assert fake.closed == [0, 1]


def test_the_facts_the_prompt_states_come_from_the_task(tmp_path, draft):
    facts = ContainerShell(timeout_sec=45).facts(draft)
    assert facts.timeout_sec == 45 and facts.network == "no-network" and not facts.compose
    assert "no internet access" in instructions(facts) and "times out after 45 s" in instructions(facts)
    compose = save(load_task(lf.SEED), tmp_path / "compose")
    (compose / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: .\n  db:\n    image: postgres\n  cache:\n    image: redis\n")
    text = (compose / "task.toml").read_text().replace('network_mode = "no-network"', 'network_mode = "public"')
    (compose / "task.toml").write_text(text)
    facts = ContainerShell().facts(compose)
    assert facts.compose and facts.compose_services == ["cache", "db"] and facts.network == "public"
    prompt = instructions(facts)
    assert "reachable by their service names" in prompt and "cache, db" in prompt and "It has network access" in prompt
    assert "times out after 300 s" in prompt and "{" not in prompt


@pytest.mark.sandbox
def test_the_shell_is_the_candidates_own_container(sandbox, draft):
    """For real: state persists, a timed-out command is killed inside, no network, fresh uploads, nothing left."""
    from envevo.runtime import list_containers
    from envevo.runtime._cleanup import owner_id

    async def main():
        async with ContainerShell(sandbox, timeout_sec=3).session(draft) as s:
            out = {"state": await s.run("echo kept > /tmp/state && ls -d /logs/verifier")}
            out["again"] = await s.run("cat /tmp/state; ls /sys/class/net")
            out["slow"] = await s.run("sleep 60; echo never")
            out["after"] = await s.run("ps -eo args | grep -c '^sleep 60' || true")
            out["solution"] = await s.run("ls /solution", upload_solution=True)
            (draft / "solution" / "extra.txt").write_text("new\n")
            out["fresh"] = await s.run("cat /solution/extra.txt", upload_solution=True)
            (draft / "solution" / "extra.txt").unlink()
            out["gone"] = await s.run("ls /solution", upload_solution=True)
            out["running"] = list_containers(sandbox, owner_id())
            return out

    out = asyncio.run(main())
    assert out["state"].exit_code == 0 and "/logs/verifier" in out["state"].output
    assert out["again"].output.split() == ["kept", "lo"]  # state kept; no network but loopback
    assert out["slow"].timed_out and "never" not in out["slow"].output
    assert out["after"].output.strip() == "0"  # the timed-out command did not keep running
    assert "solve.sh" in out["solution"].output and out["fresh"].output.strip() == "new"
    assert "extra.txt" not in out["gone"].output
    assert len(out["running"]) == 1
    assert list_containers(sandbox, owner_id()) == []


@pytest.mark.sandbox
def test_on_a_compose_task_the_shell_runs_in_main_and_reaches_the_sidecars(sandbox, tmp_path):
    import shutil

    from tests.conftest import FIXTURES

    task = tmp_path / "compose"
    shutil.copytree(FIXTURES / "realistic" / "compose", task)
    shell = ContainerShell(sandbox, timeout_sec=20)
    assert shell.facts(task).compose_services == ["kv"]

    async def main():
        async with shell.session(task) as s:
            return await s.run("getent hosts kv >/dev/null && echo kv-reachable; ls -d /logs/verifier")

    out = asyncio.run(main())
    assert out.exit_code == 0 and out.output.split() == ["kv-reachable", "/logs/verifier"]
