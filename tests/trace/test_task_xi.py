"""ξ of a task from its metadata: a procedural task's chain through the catalog's reader, an LLM engine's trace as is."""

from __future__ import annotations

import pytest

from envevo.catalog import chain_from_task, random_chain
from envevo.errors import UserError
from envevo.evolve.engines.procedural import compose
from envevo.trace import XI_READERS, Step, Trace, has_trace, trace_of_task
from tests.store.test_store_support import tiny_task


def test_a_procedural_task_reads_back_its_chain_exactly() -> None:
    chain = random_chain(None, 3, 5)
    task = compose(chain)
    assert list(XI_READERS) == ["procedural"]
    assert has_trace(task)
    assert trace_of_task(task) == chain_from_task(task).trace() == chain.trace()


def test_a_stored_trace_is_read_as_is_and_a_bare_task_has_none() -> None:
    xi = Trace(goal="g", steps=(Step(scenario="logs", skill="grep"),), final="report")
    task = tiny_task("xi")
    assert not has_trace(task)
    with pytest.raises(UserError, match="carries no ξ"):
        trace_of_task(task)
    task.update_envevo_metadata(engine="llm", trace=xi.model_dump(mode="json"))
    assert has_trace(task) and trace_of_task(task) == xi
    # a chain only counts for an engine that has a registered reader
    task.update_envevo_metadata(engine="other", chain={"goal": "g"}, trace=xi.model_dump(mode="json"))
    assert trace_of_task(task) == xi
