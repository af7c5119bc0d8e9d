"""The Ray executor on a real local cluster (a head and two worker nodes on this machine) with real podman
trials: three procedural lineages evolve with every generation run on a worker and committed by the driver;
the lineages are the asyncio executor's for the same seed; a worker node killed mid-generation costs at most
that generation, and the store checks clean."""

import asyncio
import os
import shutil
import time

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from envevo.evolve import EvolveConfig, evolve, make_engine, make_executor, start_lineages  # noqa: E402
from envevo.runtime import list_containers  # noqa: E402
from envevo.store import LineageStore  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

# Serial: under a parallel run's load a node's raylet aborted at start-up ("Timed out waiting for file
# .../metrics_agent_port": its dashboard agent came up too late), failing the cluster fixture; alone it starts.
# Timeout: alone on a loaded machine (other work at load 5-16) one test took 891 s here, against the default 900.
pytestmark = [pytest.mark.sandbox, pytest.mark.cluster, pytest.mark.serial, pytest.mark.timeout(1800)]

OBJECT_STORE = 80 * 1024**2  # Ray's floor is 75 MiB; task files are a few kB


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A head that runs nothing (num_cpus=0: every generation lands on a worker) and two one-CPU workers."""
    monkeypatch.setenv("ENVEVO_RAY_CACHE", str(tmp_path / "ray-cache"))
    # Workers import this checkout (tests.fakes too), as the nodes inherit the environment.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": OBJECT_STORE})
    try:
        workers = [c.add_node(num_cpus=1, object_store_memory=OBJECT_STORE) for _ in range(2)]
        c.wait_for_nodes()
        yield c, workers
    finally:
        ray.shutdown()
        c.shutdown()


def seeds(n: int = 3):
    from envevo.catalog import random_chain
    from envevo.evolve.engines.procedural import compose

    return [(f"seed{i}", compose(random_chain(None, 2, 100 + i))) for i in range(n)]


CONFIG = EvolveConfig(generations=2, repeats=1, red_team="off", trial_concurrency=2, lineage_concurrency=3, seed=5)


@pytest.fixture(scope="module")
def gated(sandbox, tmp_path_factory):
    """A store with the three seeds through the seed gate, made once: each run below starts from a copy. The gate
    verifies each seed on the driver (start_lineages takes no executor), so it is the same for both executors; and a
    known lineage is taken as stored, never verified again. Gating them per run cost about 90 s a run."""
    path = tmp_path_factory.mktemp("gated") / "run"
    engine, checks = make_engine("procedural", env=sandbox)
    with LineageStore.open(path) as store:
        asyncio.run(start_lineages(store, seeds(), engine, CONFIG, checks=checks))
    return path


async def run(path, executor, gated, config=CONFIG, on_event=None):
    shutil.copytree(gated, path)
    engine, checks = make_engine("procedural", env="podman")
    with LineageStore.open(path) as store:
        ids = await start_lineages(store, seeds(), engine, config, checks=checks)
        return await evolve(store, ids, engine, config, checks=checks, executor=executor, on_event=on_event)


def lineage_hashes(path):
    with LineageStore.open(path, create=False) as store:
        assert store.check() == []
        versions = store.versions()
        assert all(v.verified for v in versions)
        return {(v.lineage_id, v.generation): v.task_hash for v in versions}


def test_three_lineages_on_two_workers_match_asyncio(sandbox, gated, cluster, tmp_path):
    c, _ = cluster
    statuses = asyncio.run(run(tmp_path / "ray", make_executor("ray", address=c.address), gated))
    assert set(statuses.values()) == {"done"}
    on_ray = lineage_hashes(tmp_path / "ray")
    assert sorted(g for _, g in on_ray) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # The work really ran on the workers: each node's cache holds the task files it was sent.
    assert any((tmp_path / "ray-cache" / "tasks").iterdir())
    asyncio.run(run(tmp_path / "local", make_executor("asyncio"), gated))
    assert lineage_hashes(tmp_path / "local") == on_ray


def test_a_worker_node_lost_mid_generation_costs_only_that_generation(sandbox, gated, cluster, tmp_path):
    c, nodes = cluster
    path = tmp_path / "run"
    workers: set[str] = set()
    killed: list[bool] = []

    def on_event(e):
        if e.stage == "worker":
            workers.add(e.detail)
        # Both workers busy (three lineages, two CPUs), a candidate in its sandboxes: kill a node under it, and
        # bring one back. On the driver's loop (Ray starts nodes from the main thread only): the driver stalls.
        if e.generation == 2 and "verifying" in e.detail and not killed:
            killed.append(True)
            c.remove_node(nodes[0], allow_graceful=False)
            c.add_node(num_cpus=1, object_store_memory=OBJECT_STORE)

    statuses = asyncio.run(run(path, make_executor("ray", address=c.address), gated, CONFIG, on_event))
    assert killed, "no generation was in flight to interrupt"
    assert set(statuses.values()) == {"done"}
    hashes = lineage_hashes(path)
    assert sorted(g for _, g in hashes) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # The killed worker's sandboxes were swept by the next generation on this host; no other worker left any.
    for worker in workers:
        assert list_containers(sandbox, owner=worker) == [], worker


def test_verify_runs_each_trial_as_a_ray_task_on_a_remote_env(cluster, tmp_path):
    """`envevo verify --executor ray` on the fake remote provider: every trial on a worker, the verdicts intact."""
    import json

    from envevo.catalog import random_chain
    from envevo.evolve.engines.procedural import compose
    from envevo.task import save
    from tests.conftest import run_cli

    c, _ = cluster
    task_dir = save(compose(random_chain(None, 2, 7)), tmp_path / "task")
    done = run_cli("verify", str(task_dir), "--env", "tests.fakes.remote_env:FakeRemoteEnvironment", "--repeats", "2",
                   "--red-team", "off", "--mutation", "off", "--executor", "ray", "--ray-address", c.address, "--max-sandboxes", "2",
                   "--json", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stderr[-2000:]
    [verdict] = json.loads(done.stdout)
    assert verdict["ok"], verdict
    # The trials ran on the workers: their logs are in the nodes' cache, none in the driver's jobs dir.
    assert list((tmp_path / "ray-cache" / "trials").glob("*/trials/*"))
    assert not list((tmp_path / "jobs").glob("**/result.json"))


def _ray_worker_owners(engine: str) -> set[str]:
    """Owners (host:pid) of live envevo containers whose owner is a Ray worker process."""
    from envevo.runtime._cleanup import _ps

    owners = set()
    for _, owner, _ in _ps(engine, "label=envevo.owner"):
        pid = owner.rpartition(":")[2]
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"ray::" in cmdline or b"default_worker" in cmdline:
            owners.add(owner)
    return owners


def test_ctrl_c_on_the_driver_cancels_remote_work_and_leaves_no_sandbox(sandbox, cluster, tmp_path):
    import signal
    import subprocess

    from tests.conftest import ENVEVO, run_cli

    c, _ = cluster
    seed, run_dir = tmp_path / "seed", tmp_path / "run"
    assert run_cli("seed", "procedural", str(seed), "--length", "2", "--seed", "4").returncode == 0
    proc = subprocess.Popen([*ENVEVO, "evolve", str(seed), "--run", str(run_dir), "--generations", "2", "--repeats",
                             "1", "--red-team", "off", "--executor", "ray", "--ray-address", c.address], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not (owners := _ray_worker_owners(sandbox)):  # a generation's sandboxes are up on a worker
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        assert time.monotonic() < deadline, "no sandbox ever started on a worker"
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    deadline = time.monotonic() + 60
    while any(list_containers(sandbox, owner=o) for o in owners) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(list_containers(sandbox, owner=o) for o in owners)
    with LineageStore.open(run_dir, create=False) as store:
        assert store.check() == []
