"""prime-rl's TaskSampler protocol over real verifiers.v1 tasks and episodes, and — with ENVEVO_PRIME_RL_SRC naming a
prime-rl checkout (prime-rl is not on PyPI) — inside prime-rl's own Curriculum, with its admission gate."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers.v1", reason="install the rl extra: pip install -e '.[rl]'")

PRIME_RL = os.environ.get("ENVEVO_PRIME_RL_SRC")
if PRIME_RL:  # before the adapter is imported: it subclasses prime-rl's TaskSampler when it can
    sys.path[:0] = [str(Path(PRIME_RL) / "src"), str(Path(PRIME_RL) / "packages" / "prime-rl-configs" / "src")]

from envevo.schedule import ScheduleError, make_scheduler, synthetic_lineages  # noqa: E402
from envevo.trainers.prime_rl import EnvevoTaskSampler  # noqa: E402
from tests.trainers._trainer_support import rl_export, snippet  # noqa: E402

B = 8


def _pool():
    return synthetic_lineages(3, 3, seed=1)


def _tasks(pool):
    return [vf.Task(vf.TaskData(name=r.id, prompt=f"solve {r.id}")) for lin in pool for r in lin]


def _group(task, passes: int, *, n: int = B, error: bool = False, trainable: bool = True):
    eps = []
    gid = str(uuid.uuid4())
    for k in range(n):
        trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            agent=vf.AgentInfo(config=vf.AgentConfig(), trainable=trainable),
            nodes=[],
            rewards={"reward": vf.Reward(score=1.0 if k < passes else 0.0)},
            ok=not error,
        )
        eps.append(vf.Episode(env=vf.EnvInfo(id="envevo", name="envevo"), task=trace.task,
                              group=vf.GroupInfo(id=gid), traces=[trace]))
    return eps


def _sampler(seed: int = 0):
    pool = _pool()
    return EnvevoTaskSampler(_tasks(pool), make_scheduler("el", pool, seed=seed, group_size=B))


def test_serves_generation_zero_first_and_advances_on_a_passed_group():
    s = _sampler()
    first = next(s)
    assert isinstance(first, vf.Task)
    assert first.data.name.endswith("__g00")
    # an all-pass group moves EL past this environment; 6/8 (not > tau*B) does not
    s.observe(_group(first, 6))
    assert not s.last.advanced
    s.observe(_group(first, 8))
    assert s.last.advanced and s.last.passes == 8
    served = [next(s).data.name for _ in range(3)]
    assert first.data.name not in served
    assert all(name.endswith("__g00") for name in served)


def test_whole_generation_passed_moves_to_next_generation():
    s = _sampler()
    for _ in range(3):  # three lineages: pass each generation-0 environment
        t = next(s)
        assert t.data.name.endswith("__g00")
        s.observe(_group(t, 8))
    assert next(s).data.name.endswith("__g01")


def test_errors_and_non_trainable_rollouts_are_not_counted():
    s = _sampler()
    t = next(s)
    s.observe(_group(t, 8, error=True))
    s.observe(_group(t, 8, trainable=False))
    assert s.last is None and s.observations == 0
    s.observe(_group(t, 8, n=4) + _group(t, 0, n=4, error=True))
    assert s.last.n == 4 and s.last.passes == 4


def test_state_dict_round_trips_through_json_and_resumes_identically():
    a = _sampler(seed=3)
    for _ in range(5):
        t = next(a)
        a.observe(_group(t, 8 if t.data.name.endswith("00") else 2))
    state = json.loads(json.dumps(a.state_dict()))
    b = _sampler(seed=3)
    b.load_state_dict(state)
    assert [next(a).key for _ in range(6)] == [next(b).key for _ in range(6)]
    assert a.metrics() == b.metrics() and a.metrics()["observed"] == 5.0


def test_rejects_foreign_groups_and_incomplete_tasksets():
    s = _sampler()
    stranger = vf.Task(vf.TaskData(name="other__g00", prompt="x"))
    with pytest.raises(ScheduleError, match="not in this sampler's taskset"):
        s.observe(_group(stranger, 1))
    with pytest.raises(ScheduleError, match="empty"):
        s.observe([])
    pool = _pool()
    with pytest.raises(ScheduleError, match="no task for scheduled"):
        EnvevoTaskSampler(_tasks(pool)[:-1], make_scheduler("el", pool))


def test_a_scheduler_spec_with_extensions_plugs_in():
    pool = _pool()
    s = EnvevoTaskSampler(_tasks(pool), make_scheduler("el+patience", pool, group_size=B))
    t = next(s)
    for _ in range(4):  # patience 4 at 0/8 defers the environment: the lineage is not blocked
        s.observe(_group(t, 0))
    assert s.last.deferred


def _prime_rl():
    if not PRIME_RL:
        pytest.skip("prime-rl is not on PyPI: set ENVEVO_PRIME_RL_SRC to a prime-rl checkout to run this test")
    from prime_rl.configs.orchestrator import AdvRangeGateConfig, CurriculumConfig
    from prime_rl.orchestrator.curriculum import Curriculum, TaskSampler

    return Curriculum, CurriculumConfig(gates={"adv": AdvRangeGateConfig()}), TaskSampler


def test_inside_prime_rls_own_curriculum_with_its_gate(tmp_path):
    Curriculum, config, TaskSampler = _prime_rl()
    export = rl_export(tmp_path, lineages=3, generations=2)
    import pyarrow.parquet as pq

    tasks = [vf.Task(vf.TaskData(name=r["env_id"], prompt=r["prompt"][0]["content"]))
             for r in pq.read_table(export / "index.parquet").to_pylist()]

    def documented(tasks):
        curriculum = Curriculum(config, tasks)  # what prime-rl's TrainSource builds per env
        ns = {"curriculum": curriculum, "tasks": tasks}
        exec(snippet("prime-rl").replace("runs/demo/run", str(tmp_path / "run")), ns)  # noqa: S102 - our docs
        return curriculum

    cur = documented(tasks)
    assert isinstance(cur.sampler, EnvevoTaskSampler) and isinstance(cur.sampler, TaskSampler)
    t = next(cur.sampler)
    assert t.data.name.endswith("__g01")  # from_run schedules verified versions: this run's seeds are not
    assert cur.on_result(_group(t, 8)) is True  # prime-rl observes, then asks its gates (no advantages: admit)
    assert cur.sampler.last.advanced
    assert cur.metrics()["sampler/observed"] == 1.0
    state = json.loads(json.dumps(cur.state_dict()))  # prime-rl's orchestrator checkpoint holds this
    again = documented(tasks)
    again.load_state_dict(state)
    assert [next(cur.sampler).key for _ in range(4)] == [next(again.sampler).key for _ in range(4)]
