"""Evolution on a remote (cloud) environment with the default verifiers commits its generations.

The fake remote provider (tests/fakes/remote_env.py) runs nothing: perfect tests are simulated, so the reference
solution scores 1 and the empty agent, every exploit and every near miss 0. With the red team and the mutation
verifier on (the defaults), each of their trials runs on that environment, and each generation must commit; a run
that commits nothing (every mutant once scored 1 there: benchmarks/scale_out.py divided by zero) fails here.
The host-side test runs the lineage on the driver, in the parallel suite; the cluster test runs the generations as
Ray tasks on two worker nodes, alone (serial), as benchmarks/scale_out.py does."""

from __future__ import annotations

import asyncio
import os

import pytest

from envevo.evolve import EvolveConfig, evolve, make_engine, make_executor, start_lineages
from envevo.store import LineageStore
from tests.fakes.remote_env import FakeRemoteEnvironment

ENV = "tests.fakes.remote_env:FakeRemoteEnvironment"
# The defaults (red team on, mutation sample:4, 2 oracle runs) but one generation and no drift bound: a procedural
# edit may drift, which is not what this checks.
CONFIG = EvolveConfig(generations=1, env=ENV, trial_concurrency=4, lineage_concurrency=2, seed=1, max_drift=None)


def seeds(n: int):
    from envevo.catalog import random_chain
    from envevo.evolve.engines.procedural import compose

    return [(f"seed{i}", compose(random_chain(None, 2, 500 + i))) for i in range(n)]


async def run(path, n: int, executor):
    engine, checks = make_engine("procedural", env=ENV)
    with LineageStore.open(path) as store:
        ids = await start_lineages(store, seeds(n), engine, CONFIG, checks=checks)
        return ids, await evolve(store, ids, engine, CONFIG, checks=checks, executor=executor)


def committed(path) -> dict[str, list[int]]:
    """Each lineage's committed generations."""
    with LineageStore.open(path, create=False) as store:
        assert store.check() == []
        out: dict[str, list[int]] = {}
        for v in store.versions():
            out.setdefault(v.lineage_id, []).append(v.generation)
        return out


def test_default_verifiers_commit_a_generation_on_a_remote_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_REMOTE_LATENCY", "0")
    FakeRemoteEnvironment.reset()
    ids, statuses = asyncio.run(run(tmp_path / "run", 1, make_executor("asyncio")))
    assert statuses == {ids[0]: "done"}, statuses
    assert committed(tmp_path / "run") == {ids[0]: [0, 1]}
    assert FakeRemoteEnvironment.execs > 0  # the trials ran on the remote env, not on a local engine
    with LineageStore.open(tmp_path / "run", create=False) as store:
        [accepted] = [c for c in store.candidates(ids[0], 1) if c.accepted]
        reports = {v.verifier: v for v in store.verifications(accepted.id)}
    # The red team and the mutants judged the accepted candidate there, each with trials run and nothing inconclusive.
    for name in ("red_team", "mutation"):
        assert reports[name].passed and not reports[name].inconclusive and reports[name].runs, reports[name]
    assert reports["mutation"].metrics["killed"] >= 1


@pytest.mark.cluster
@pytest.mark.serial
def test_default_verifiers_commit_every_generation_on_ray_workers(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from tests.conftest import ROOT

    monkeypatch.setenv("FAKE_REMOTE_LATENCY", "0")
    monkeypatch.setenv("ENVEVO_RAY_CACHE", str(tmp_path / "ray-cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    store = 80 * 1024**2
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": store})
    try:
        for _ in range(2):
            c.add_node(num_cpus=1, object_store_memory=store)
        c.wait_for_nodes()
        ids, statuses = asyncio.run(run(tmp_path / "run", 2, make_executor("ray", address=c.address)))
    finally:
        ray.shutdown()
        c.shutdown()
    assert set(statuses.values()) == {"done"}, statuses
    assert committed(tmp_path / "run") == {i: [0, 1] for i in ids}
    assert any((tmp_path / "ray-cache" / "tasks").iterdir())  # the generations ran on the workers
