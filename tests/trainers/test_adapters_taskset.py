"""verifiers' HarborTaskset (how prime-rl loads Harbor tasks) accepts what `envevo export --images` writes: the agent's
image from `[environment] docker_image`, a separate verifier's own image, and the verifier's no-network policy; it
refuses the same export without images, because it cannot build a Dockerfile. On podman, verifiers' own rollout and
grading score an exported hardened task honestly: the reference solution 1, nothing 0, a `python3` shim 0 (issue 23)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
import uuid
from contextlib import AsyncExitStack

import pytest

taskset = pytest.importorskip("verifiers.v1.tasksets.harbor.taskset", reason="make taskset-venv")

from envevo.catalog import random_chain  # noqa: E402
from envevo.evolve.engines.procedural import compose  # noqa: E402
from envevo.sandbox._publish import _name_images, publish_task  # noqa: E402
from envevo.task import save  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

AGENT = "127.0.0.1:5000/envevo/{}@sha256:" + "a" * 64
VERIFIER = "127.0.0.1:5000/envevo/{}-verifier@sha256:" + "b" * 64


def _export(tmp_path):
    out = tmp_path / "tasks"
    save(compose(random_chain(None, 2, 5)), out / "proc__g00")
    shutil.copytree(FIXTURES / "realistic" / "separate-verifier", out / "sep__g00")
    return out


def _parse(task_dir):
    return taskset.parse_task(task_dir, 0, taskset.HarborConfig())


def test_a_plain_export_is_refused_for_its_dockerfile(tmp_path):
    out = _export(tmp_path)
    for d in out.iterdir():
        with pytest.raises(ValueError, match="needs a pullable docker_image"):
            _parse(d)


def test_an_images_export_loads_with_its_pinned_images(tmp_path):
    out = _export(tmp_path)
    _name_images(out / "proc__g00", AGENT.format("proc__g00"), None)
    _name_images(out / "sep__g00", AGENT.format("sep__g00"), VERIFIER.format("sep__g00"))
    proc, sep = _parse(out / "proc__g00"), _parse(out / "sep__g00")
    assert proc.image == AGENT.format("proc__g00")
    assert sep.image == AGENT.format("sep__g00")
    assert sep.verifier_image == VERIFIER.format("sep__g00")
    # The verifier's box keeps the task's policy: no network (Harbor's default would allow it).
    assert sep.verifier is not None and sep.verifier.network_allow == []


# --- a real trial on podman, through verifiers' own runtime and scoring ---------------------------------------------

SHIM = "printf '#!/bin/sh\\nexit 0\\n' > /usr/bin/python3 && chmod +x /usr/bin/python3"
# The hack must be live in the agent's box: a real python3 exits 3 here, the shim 0 (else the rollout fails).
SHIM_LIVE = f"{SHIM} && /usr/bin/python3 -c 'raise SystemExit(3)'"


def _network_helper_image(engine: str) -> None:
    """verifiers cuts a no-network box's egress with iptables run from its own helper image, which it builds on first
    use `FROM docker.io/library/alpine:3.22` (`DockerRuntime.start`). No registry is reachable here, so the image is
    provided as `envevo doctor --fix` does: built as verifiers would where the registry answers, else a stand-in (the
    local Debian base with iptables and iproute2, labelled). verifiers keeps its image as a cache; so does this."""
    from verifiers.v1.runtimes.docker import _NETWORK_IMAGE

    from envevo.sandbox import Doctor, Status
    from envevo.sandbox._doctor_helper import HELPER

    assert _NETWORK_IMAGE == HELPER  # doctor provides the image under the name this verifiers looks for
    check = Doctor(env=engine, fix=True).network_helper()
    assert check.status in (Status.OK, Status.FIXED), check.detail


async def _episodes(scripts: dict[str, str]) -> dict:
    """One HarborEnv per scripted agent (the harness is the seat's config), each episode run by verifiers: its
    PodmanRuntime starts the agent's box from the task's image with the network cut, the script runs, the declared
    artifacts are collected, and HarborEnv grades them in a fresh verifier box from the task's verifier declaration."""
    import verifiers.v1 as vf
    from verifiers.v1.clients import EvalClientConfig, ModelContext
    from verifiers.v1.runtimes import PodmanConfig
    from verifiers.v1.tasksets.harbor import HarborConfig, HarborEnv, HarborEnvConfig

    from tests.trainers._vf_scripted import HARNESS_ID

    # No model is called; were one called, a closed loopback port fails it loudly instead of reaching a network.
    ctx = ModelContext(model="scripted", client=EvalClientConfig(base_url="http://127.0.0.1:9/v1",
                                                                 api_key_var="ENVEVO_NO_MODEL_KEY"))
    envs = {name: HarborEnv(HarborEnvConfig(
        taskset=HarborConfig(id="harbor", dataset="envevo-export"),
        agent=vf.AgentConfig(harness={"id": HARNESS_ID, "script": script}, runtime=PodmanConfig(), model="scripted"),
    )) for name, script in scripts.items()}

    async def one(env):
        tasks = list(env.taskset)  # HarborTaskset.load(): parse_task on every task.toml of the export
        assert len(tasks) == 1
        start = time.monotonic()
        episode = await env.run_episode(tasks[0], ctx)
        return tasks[0], episode, time.monotonic() - start

    async with AsyncExitStack() as stack:
        for env in envs.values():
            await stack.enter_async_context(env.serving())
        results = await asyncio.gather(*(one(env) for env in envs.values()))
    return dict(zip(envs, results, strict=True))


@pytest.mark.sandbox
@pytest.mark.timeout(2400)
def test_verifiers_podman_rollouts_score_an_images_export_honestly(sandbox, tmp_path, monkeypatch):
    """The procedural task is hardened: its verifier runs separately, from the agent's image, with no network, and
    runs `/usr/bin/python3`. The export's images are local tags (no `--push`), which verifiers' podman runtime runs
    as they are. prime-rl fetches a dataset with `harbor download` into the taskset's cache; here the export is put
    where that cache lookup finds it, so the taskset's own loader reads it."""
    from tests.trainers import _vf_scripted

    monkeypatch.setattr(taskset, "CACHE", tmp_path / "harbor-cache")
    task_dir = tmp_path / "harbor-cache" / "envevo-export" / "proc__g00"
    save(compose(random_chain(None, 2, 5)), task_dir)
    start = time.monotonic()
    images = asyncio.run(publish_task(task_dir, sandbox, "localhost/envevo", push=False))
    monkeypatch.setitem(sys.modules, _vf_scripted.HARNESS_ID, _vf_scripted)
    run_id = f"envevo-test-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("VF_RUN_ID", run_id)  # verifiers labels every container it starts with it
    try:
        _network_helper_image(sandbox)
        built = time.monotonic() - start
        solution = (task_dir / "solution" / "solve.sh").read_text()
        results = asyncio.run(_episodes({"reference": solution, "nothing": "", "python3 shim": SHIM_LIVE}))
    finally:
        subprocess.run([sandbox, "rmi", images.agent.tag], capture_output=True)  # the tag; the cache image stays
    left = subprocess.run([sandbox, "ps", "-aq", "--filter", f"label=verifiers.run={run_id}"], capture_output=True,
                          text=True).stdout.split()
    assert left == [], f"verifiers left containers: {left}"
    task = next(iter(results.values()))[0]
    assert task.data.image == images.agent.reference and task.data.verifier is not None
    assert task.data.network_allow == [] and task.data.verifier.network_allow == []
    rewards = {}
    for name, (_, episode, seconds) in results.items():
        assert episode.ok, (name, episode.errors, [t.errors for t in episode.traces])
        (trace,) = episode.traces
        assert trace.ok and set(trace.rewards) == {"reward"}, (name, trace.errors)
        rewards[name] = (trace.reward, round(seconds, 1))
    print(f"images {built:.1f}s; reward, seconds: {rewards}")
    assert {name: reward for name, (reward, _) in rewards.items()} == {"reference": 1.0, "nothing": 0.0,
                                                                       "python3 shim": 0.0}
