"""Engine calls of envevo's local environment, counted through a fake engine on PATH (no container runs).

Verification latency is the number of engine calls on a trial's path: each artifact is copied out once (the copy
that decides file or directory goes on to extract it), an upload into a stopped container nothing reads is
skipped, and directory preparation rides on the next command instead of costing its own."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path

import pytest
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths
from harbor.trial.artifact_handler import ArtifactHandler

from envevo.runtime._local_env import PodmanLocalEnvironment

FAKE = f"""#!{sys.executable}
import json, os, sys, tarfile
args = sys.argv[1:]
with open(os.environ["FAKE_ENGINE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[0] == "cp" and args[-1] == "-":
    src = args[1].split(":", 1)[1]
    path = os.environ["FAKE_ROOT"] + src
    if src == os.environ.get("FAKE_CP_BROKEN"):  # the engine fails on a path that exists (storage under load)
        sys.exit("Error: layer not known")
    if not os.path.exists(path):
        sys.exit(f"Error: {{src}}: no such file or directory")
    with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
        tar.add(path, arcname=os.path.basename(src.rstrip("/")))
"""


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """A fake `podman` that logs its argv and streams `cp CTR:PATH -` from a directory standing for the container."""
    bin_dir, root = tmp_path / "bin", tmp_path / "container"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text(FAKE)
    (bin_dir / "podman").chmod(0o755)
    (root / "app" / "out").mkdir(parents=True)
    (root / "app" / "out" / "answer.txt").write_text("42\n")
    (root / "app" / "result.json").write_text("{}\n")
    (root / "logs" / "artifacts").mkdir(parents=True)
    log = tmp_path / "engine.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(log))
    monkeypatch.setenv("FAKE_ROOT", str(root))

    def calls(verb: str | None = None) -> list[list[str]]:
        argvs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return [a for a in argvs if verb is None or a[0] == verb]

    return calls


def _env(tmp_path: Path) -> PodmanLocalEnvironment:
    (tmp_path / "task" / "environment").mkdir(parents=True)
    (tmp_path / "task" / "environment" / "Dockerfile").write_text("FROM scratch\n")
    paths = TrialPaths(trial_dir=tmp_path / "trial")
    paths.mkdir()
    env = PodmanLocalEnvironment(environment_dir=tmp_path / "task" / "environment", environment_name="t",
                                 session_id="t__env", trial_paths=paths, task_env_config=EnvironmentConfig())
    env._container, env._image_ref = "ctr", "img"  # as if started
    return env


def test_each_artifact_is_copied_out_once(tmp_path, engine):
    env = _env(tmp_path)
    handler = ArtifactHandler(artifacts=["/app/out", "/app/result.json", "/app/missing"],
                              logger=logging.getLogger("test"))
    out = tmp_path / "artifacts"

    async def collect():
        await env.quiesce()  # as after the agent's phase (separate verifier)
        return await handler.download_artifacts(env, out, source_artifacts_dir="/logs/artifacts")

    manifest = asyncio.run(collect())
    sources = [argv[1].split(":", 1)[1] for argv in engine("cp")]
    assert sorted(sources) == ["/app/missing", "/app/out", "/app/result.json", "/logs/artifacts"]
    assert (out / "app" / "out" / "answer.txt").read_text() == "42\n"
    assert (out / "app" / "result.json").read_text() == "{}\n"
    status = {e.source: (e.type, e.status) for e in manifest.entries}
    assert status["/app/out"] == ("directory", "ok") and status["/app/result.json"] == ("file", "ok")
    assert status["/app/missing"][1] == "failed"


def test_an_engine_failure_on_an_artifact_is_noted_and_a_missing_one_is_not(tmp_path, engine, monkeypatch):
    """Harbor records both as a "failed" artifact and scores on; only the engine's failure on a path that exists
    leaves the note that makes the trial an infrastructure error (a `nop` legitimately lacks the outputs)."""
    from envevo.runtime._archive import COPY_FAILED, copy_failure

    monkeypatch.setenv("FAKE_CP_BROKEN", "/app/out")
    env = _env(tmp_path)
    handler = ArtifactHandler(artifacts=["/app/out", "/app/missing"], logger=logging.getLogger("test"))

    async def collect():
        await env.quiesce()
        return await handler.download_artifacts(env, tmp_path / "artifacts", source_artifacts_dir="/logs/artifacts")

    status = {e.source: e.status for e in asyncio.run(collect()).entries}
    assert status["/app/out"] == status["/app/missing"] == "failed"
    failed = [n for n in env._notes if n.startswith(COPY_FAILED)]
    assert failed == [f"{COPY_FAILED} /app/out: Error: layer not known"]
    assert copy_failure(env._notes) == failed[0]
    assert copy_failure(["agent processes ended after the agent phase (the container was stopped)"]) is None


def test_a_peek_no_download_continued_is_ended_before_the_next_command(tmp_path, engine):
    env = _env(tmp_path)

    async def run():
        assert await env.is_dir("/app/out")
        held = env._held["/app/out"]
        await env.exec("true", user="root")
        return held

    held = asyncio.run(run())
    assert held._closed and not env._held
    assert [a[0] for a in engine()] == ["cp", "exec"]


def test_agent_logs_are_not_copied_back_into_a_stopped_container(tmp_path, engine):
    env = _env(tmp_path)
    logs = tmp_path / "host-logs"
    logs.mkdir()
    (logs / "oracle.txt").write_text("done\n")

    async def run():
        await env.quiesce(["/logs/agent/"])
        await env.upload_dir(logs, "/logs/agent")  # Harbor's re-upload: nothing reads it there
        await env.upload_dir(logs, "/logs/other")  # not declared unneeded: copied

    asyncio.run(run())
    assert [a[0] for a in engine()] == ["stop", "cp"]
    assert engine("cp")[0][-1] == "ctr:/logs/other"


def test_verifier_preparation_rides_on_the_test_command(tmp_path, engine):
    """A separate verifier's sequence as Harbor 0.26 runs it: one preparation exec before the first upload into a
    prepared dir, the reward reset and chmod carried by the test command, and each still before the tests."""
    env = _env(tmp_path)
    out, empty, tests = tmp_path / "out", tmp_path / "empty", tmp_path / "tests"
    for d in (out, empty, tests):
        d.mkdir()
    (out / "answer.txt").write_text("42\n")
    (tests / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")

    async def run():
        await env.ensure_dirs(["/logs/verifier"])
        await env.empty_dirs(["/logs/verifier"])
        await env.empty_dirs(["/logs/artifacts"])
        await env.upload_dir(empty, "/logs/artifacts")  # empty: the preparation makes the dir
        await env.empty_dirs(["/app/out"])
        await env.upload_dir(out, "/app/out")
        assert (await env.exec("rm -f -- /logs/verifier/reward.txt /logs/verifier/reward.json", user="root")).return_code == 0
        await env.upload_dir(tests, "/tests")
        await env.exec("chmod +x /tests/test.sh", user="root")
        return await env.exec("(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1", user="root")

    assert asyncio.run(run()).return_code == 0
    verbs = [(a[0], a[-1]) for a in engine() if a[0] != "image"]
    assert [v for v, _ in verbs] == ["exec", "cp", "cp", "exec"]
    assert [t for v, t in verbs if v == "cp"] == ["ctr:/app/out", "ctr:/tests"]
    prep, test = engine("exec")[0][-1], engine("exec")[1][-1]
    assert "rm -rf /logs/verifier" in prep and "/app/out" in prep and "chmod 755 /logs/verifier" in prep
    assert test.index("rm -f -- /logs/verifier/reward.txt") < test.index("chmod +x") < test.index("(/tests/test.sh)")


def test_a_non_root_command_gets_the_preparation_run_first_as_root(tmp_path, engine):
    env = _env(tmp_path)

    async def run():
        await env.empty_dirs(["/logs/verifier"])
        await env.exec("id", user="nobody")

    asyncio.run(run())
    execs = engine("exec")
    assert len(execs) == 2
    assert execs[0][execs[0].index("--user") + 1] == "root" and "rm -rf /logs/verifier" in execs[0][-1]
    assert execs[1][execs[1].index("--user") + 1] == "nobody" and execs[1][-1] == "id"


def test_only_harbor_chores_on_its_own_uploads_are_deferred(tmp_path, engine):
    env = _env(tmp_path)

    async def run():
        results = [await env.exec("chmod +x /usr/local/bin/tool", user="root"),  # not uploaded here: runs now
                   await env.exec("rm -f -- /etc/passwd", user="root")]  # not a reward reset: runs now
        await env.exec("rm -f -- /logs/verifier/reward.txt", user="nobody")  # not root: runs now
        return results

    asyncio.run(run())
    assert [a[-1] for a in engine("exec")] == ["chmod +x /usr/local/bin/tool", "rm -f -- /etc/passwd",
                                               "rm -f -- /logs/verifier/reward.txt"]


def test_agent_logs_and_the_artifacts_dir_leave_a_quiesced_container_in_one_copy(tmp_path, engine):
    """Harbor's order after the agent phase: the agent's logs, then the artifacts convention dir: one `cp /logs`."""
    env = _env(tmp_path)
    root = tmp_path / "container"
    (root / "logs" / "agent" / "sub").mkdir(parents=True)
    (root / "logs" / "agent" / "trajectory.json").write_text("[]\n")
    (root / "logs" / "agent" / "sub" / "x.txt").write_text("x\n")
    (root / "logs" / "artifacts" / "report.txt").write_text("r\n")
    os.symlink("/etc/hostname", root / "logs" / "agent" / "script.log")  # hostile: never followed nor made
    handler = ArtifactHandler(artifacts=["/app/out"], logger=logging.getLogger("test"))
    agent_dir, out = env.trial_paths.agent_dir, tmp_path / "artifacts"
    (agent_dir / "exit-code.txt").write_text("1")  # written by the host before the download

    async def run():
        await env.quiesce(["/logs/agent/"])
        await env.download_dir("/logs/agent", agent_dir)
        manifest = await handler.download_artifacts(env, out, source_artifacts_dir="/logs/artifacts")
        stash = env._logs_copy
        await env.stop(delete=True)
        return manifest, stash

    manifest, stash = asyncio.run(run())
    assert [a[1].split(":", 1)[1] for a in engine("cp")] == ["/logs", "/app/out"]
    assert (agent_dir / "trajectory.json").read_text() == "[]\n" and (agent_dir / "sub" / "x.txt").read_text() == "x\n"
    assert (agent_dir / "exit-code.txt").read_text() == "1" and not os.path.lexists(agent_dir / "script.log")
    assert (out / "logs" / "artifacts" / "report.txt").read_text() == "r\n" and (out / "app" / "out" / "answer.txt").read_text() == "42\n"
    assert {e.source: e.status for e in manifest.entries} == {"/logs/artifacts": "ok", "/app/out": "ok"}
    assert stash is not None and not stash.exists()  # removed with the container


def test_a_command_after_the_logs_copy_makes_later_downloads_copy_again(tmp_path, engine):
    """A collect hook restarts the container and may write /logs: the copy made before it is not served."""
    env = _env(tmp_path)

    async def run():
        await env.quiesce()
        await env.download_dir("/logs/agent", env.trial_paths.agent_dir)
        await env.exec("stat /app > /logs/artifacts/modes.txt", user="root")
        assert env._logs_copy is None
        await env.download_dir("/logs/artifacts", tmp_path / "arts")

    (tmp_path / "container" / "logs" / "agent").mkdir()
    asyncio.run(run())
    assert [(a[0], a[1]) for a in engine() if a[0] in ("cp", "start")] == [
        ("cp", "ctr:/logs"), ("start", "ctr"), ("cp", "ctr:/logs/artifacts")]


def test_the_oracle_log_comes_with_the_agent_logs(tmp_path, engine):
    """Harbor's oracle agent downloads oracle.txt right after solve.sh: no call of its own, the file still lands."""
    env = _env(tmp_path)
    (tmp_path / "container" / "logs" / "agent").mkdir()
    (tmp_path / "container" / "logs" / "agent" / "oracle.txt").write_text("solved\n")
    agent_dir = env.trial_paths.agent_dir

    async def run():
        await env.download_file("/logs/agent/oracle.txt", agent_dir / "oracle.txt")
        assert engine() == []
        await env.quiesce(["/logs/agent/"])
        await env.download_dir("/logs/agent", agent_dir)
        await env.stop(delete=True)

    asyncio.run(run())
    assert (agent_dir / "oracle.txt").read_text() == "solved\n"
    assert [a[1] for a in engine("cp")] == ["ctr:/logs"]


def test_an_oracle_log_no_agent_log_download_brought_is_fetched_at_stop(tmp_path, engine):
    env = _env(tmp_path)
    (tmp_path / "container" / "logs" / "agent").mkdir()
    (tmp_path / "container" / "logs" / "agent" / "oracle.txt").write_text("partial\n")
    target = env.trial_paths.agent_dir / "oracle.txt"

    async def run():
        await env.download_file("/logs/agent/oracle.txt", target)
        await env.stop(delete=True)

    asyncio.run(run())
    assert target.read_text() == "partial\n"
    assert [a[0] for a in engine()] == ["cp", "rm"]
