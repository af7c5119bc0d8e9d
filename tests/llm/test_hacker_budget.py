"""The LLM hacker on the run's model is billed to the lineage whose candidate it attacks (issue 25): its tokens count
against that lineage's --max-tokens/--max-cost, and a lineage already over its cap gets no attack (no sandbox)."""

import asyncio
from contextlib import asynccontextmanager

from envevo.llm import LLMRuntime, LLMSettings
from envevo.llm import _hacker as hacker_module
from envevo.llm._hacker import LLMHacker
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.models import scripted


class _Session:
    """A sandbox session the hacker never needs to exec in: the scripted model answers at once."""


def _attack(runtime: LLMRuntime, tmp_path):
    task = load_task(lf.SEED)
    return asyncio.run(LLMHacker(runtime=runtime).attack(task, lf.SEED, "podman", tmp_path, asyncio.Semaphore(1)))


def test_the_hackers_tokens_count_against_the_candidates_lineage(tmp_path, monkeypatch):
    opened = []

    @asynccontextmanager
    async def session(task_dir, env, logs_dir=None):
        opened.append(task_dir)
        yield _Session()

    monkeypatch.setattr(hacker_module, "open_session", session)
    judge = scripted({"found": False, "summary": "nothing to forge"})
    rt = LLMRuntime(LLMSettings(model="openai:m", max_tokens=10_000), models={"judge": judge})
    rt.owner = lambda h: ("lin", 2)
    attack = _attack(rt, tmp_path)
    assert attack.error is None and attack.summary == "nothing to forge"
    (rec,) = rt.meter.records
    assert (rec.role, rec.lineage, rec.generation) == ("hacker", "lin", 2)
    assert rt.meter.spent("lin").tokens == rec.input_tokens + rec.output_tokens > 0

    rt.meter.preload("lin", 10_000, 0.0)  # the lineage has spent its budget: no attack, no sandbox
    attack = _attack(rt, tmp_path)
    assert attack.error is not None and "did not run: lineage lin used 10000 tokens" in attack.error
    assert "--max-tokens" in attack.error and len(opened) == 1


def test_each_attack_reports_its_own_model_usage_when_attacks_run_at_once(tmp_path, monkeypatch):
    """Attacks on many tasks share one runtime and run concurrently; each verdict's note gives that attack's calls and
    tokens (a tally per attack, not the runtime's running total)."""

    @asynccontextmanager
    async def session(task_dir, env, logs_dir=None):
        yield _Session()

    monkeypatch.setattr(hacker_module, "open_session", session)
    judge = scripted({"found": False, "summary": "a"}, {"found": False, "summary": "b"}, {"found": False, "summary": "c"})
    rt = LLMRuntime(LLMSettings(model="openai:m"), models={"judge": judge})
    task = load_task(lf.SEED)

    async def three():
        gate = asyncio.Semaphore(3)
        return await asyncio.gather(*(LLMHacker(runtime=rt).attack(task, lf.SEED, "podman", tmp_path / str(i), gate)
                                      for i in range(3)))

    attacks = asyncio.run(three())
    assert len(rt.meter.records) == 3
    assert [a.model_calls for a in attacks] == [1, 1, 1]
    assert sum(a.input_tokens + a.output_tokens for a in attacks) == sum(
        r.input_tokens + r.output_tokens for r in rt.meter.records) > 0
