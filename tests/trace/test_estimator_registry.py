"""The one p_T estimator registry: every estimator by name, lazily, and the estimator a run recorded, rebuilt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envevo._registry import Entry, Registry
from envevo.errors import UserError
from envevo.evolve import recorded_estimator_names, run_estimator
from envevo.evolve.engines.llm import LabelPrior
from envevo.store import LineageStore
from envevo.trace import ESTIMATORS, Step, Trace, difficulty, estimator, estimator_name, estimator_of
from tests.store.test_store_support import tiny_task


def test_all_four_estimators_are_registered() -> None:
    assert set(ESTIMATORS) == {"catalog", "corpus", "llm", "llm-label"}
    assert estimator("llm-label").name == LabelPrior.name == "llm-label-uniform-v1"
    with pytest.raises(UserError, match="unknown p_T estimator 'vibes'; choose one of: catalog, corpus, llm, llm-label"):
        estimator("vibes")


def test_the_registry_imports_nothing_until_an_estimator_is_chosen() -> None:
    # envevo.catalog too: trace sits below it and reaches the catalog prior by name only
    code = ("import sys, envevo.trace; "
            "print(any(m.startswith(('envevo.llm', 'envevo.evolve', 'envevo.store', 'envevo.catalog')) for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_recorded_names_map_back_to_their_estimator() -> None:
    assert estimator_name("procedural-catalog-v1") == "catalog"
    assert estimator_name("llm-label-uniform-v1") == "llm-label"
    assert estimator_name("llm-judgement-v1:Qwen/Qwen3-8B") == "llm"
    assert estimator_name("corpus-v1:all-MiniLM-L6-v2:4t:3f2a9c1d") == "corpus"
    assert estimator_of("procedural-catalog-v1").name == "procedural-catalog-v1"
    with pytest.raises(UserError, match="pass the same reference corpus"):
        estimator_of("corpus-v1:all-MiniLM-L6-v2:4t:3f2a9c1d")
    with pytest.raises(UserError, match="now gives llm-label-uniform-v1"):
        estimator_of("llm-label-uniform-v2")  # another version of the same estimator is not the same figures


def llm_label_run(root: Path) -> Path:
    """A run whose versions carry D_T under the LLM engine's prior, as an LLM-engine run records it."""
    prior = LabelPrior()
    trace = Trace(goal="count lines", steps=(Step(scenario="a CSV file", skill="grep"),
                                             Step(scenario="a kerberos keytab", skill="ktutil")))
    with LineageStore.open(root, durable=False) as store:
        store.create_lineage("seed", tiny_task("llm", "Count the lines."), trace=trace,
                             difficulty=difficulty(trace, prior), verified=True)
    return root


def test_a_run_is_recomputed_under_the_estimator_it_recorded(tmp_path: Path) -> None:
    run = llm_label_run(tmp_path / "run")
    with LineageStore.open(run, create=False) as store:
        assert recorded_estimator_names(store) == ["llm-label-uniform-v1"]
        [v] = store.versions()
    p = run_estimator(run)
    assert p.name == "llm-label-uniform-v1"
    assert v.trace is not None and difficulty(v.trace, p) == v.difficulty  # the same p_T gives the same D_T


def test_a_missing_extra_is_named() -> None:
    reg = Registry("widget", {"w": Entry("envevo_no_such_module:W", extra="widgets")}, error=UserError)
    with pytest.raises(UserError, match=r"pip install 'envevo\[widgets\]'"):
        reg.load("w")
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("w", "other:W")
