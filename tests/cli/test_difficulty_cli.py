"""`envevo difficulty`: D_T and its terms for a task and for every generation of a run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.catalog import CatalogPrior, random_chain
from envevo.cli.difficulty_cmd import difficulty, run_rows, task_rows
from envevo.errors import UserError
from envevo.evolve.engines.procedural import write_task
from envevo.store import LineageStore
from envevo.task import load_task, save
from envevo.trace import ESTIMATORS, estimator, trace_of_task
from tests.store.test_store_support import tiny_task
from tests.trace.test_estimator_registry import llm_label_run

app = typer.Typer()
app.command()(difficulty)


def test_task_difficulty_matches_the_catalog_prior(tmp_path: Path) -> None:
    chain = random_chain(None, 3, 7)
    path = write_task(chain, tmp_path / "t")
    [row] = asyncio.run(task_rows([path]))
    want = CatalogPrior().difficulty(chain.trace())
    assert (row["L"], row["D_T"], row["estimator"]) == (3, want.D_T, "procedural-catalog-v1")
    assert row["D_T"] == pytest.approx(row["scenario_novelty"] + row["skill_rarity"], abs=1e-5)


def test_run_json_gives_every_generation_and_rises_with_length(procedural_run) -> None:
    run, chains = procedural_run
    res = CliRunner().invoke(app, [str(run), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["kind"] == "run" and data["estimator"] == "procedural-catalog-v1"
    rows = data["rows"]
    assert [r["generation"] for r in rows] == [0, 1, 2]
    assert [r["L"] for r in rows] == [c.L for c in chains]
    for r in rows:
        assert {"D_T", "scenario_novelty", "skill_rarity", "estimator", "xi"} <= set(r)
    assert rows[0]["D_T"] < rows[1]["D_T"] < rows[2]["D_T"]  # a length edit only adds terms


def test_table_output_names_the_estimator(procedural_run) -> None:
    run, _ = procedural_run
    res = CliRunner().invoke(app, [str(run)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "procedural-catalog-v1" in res.stdout and "length" in res.stdout
    assert run_rows(run)[2]["direction"] == "length"


def test_non_procedural_task_is_one_line_error(tmp_path: Path) -> None:
    path = save(tiny_task("hello"), tmp_path / "plain")
    with pytest.raises(UserError, match="--extract-model"):
        trace_of_task(load_task(path))
    res = CliRunner().invoke(app, [str(path)])
    assert res.exit_code == 2
    assert "--extract-model" in res.output and "Traceback" not in res.output


def test_an_llm_engine_run_is_recomputed_under_its_recorded_estimator(tmp_path: Path) -> None:
    """Without --estimator, a run's D_T is recomputed under the p_T it recorded (here the LLM engine's label
    prior), not under catalog; --estimator still chooses another."""
    run = llm_label_run(tmp_path / "run")
    res = CliRunner().invoke(app, [str(run), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["estimator"] == "llm-label-uniform-v1"
    [row] = data["rows"]
    assert row["estimator"] == "llm-label-uniform-v1"
    with LineageStore.open(run, create=False) as store:
        [v] = store.versions()
    assert v.difficulty is not None and row["D_T"] == pytest.approx(v.difficulty.D_T)  # the run's own figure
    res = CliRunner().invoke(app, [str(run), "--json", "--estimator", "catalog"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["estimator"] == "procedural-catalog-v1"


def test_unknown_estimator_and_missing_target(tmp_path: Path) -> None:
    assert "catalog" in ESTIMATORS and estimator("catalog").name == "procedural-catalog-v1"
    with pytest.raises(UserError, match="unknown p_T estimator"):
        estimator("nope")
    res = CliRunner().invoke(app, [str(tmp_path / "missing")])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_a_task_without_xi_is_extracted_by_the_llm_proposer(tmp_path: Path) -> None:
    """Through the local fake OpenAI-compatible server: the Proposer's extraction (evidence quotes checked
    against the task files) gives ξ, and D_T is computed on it; without a model, one line says what to pass."""
    import os

    from tests.conftest import run_cli
    from tests.fakes import log_forensics as lf
    from tests.fakes.openai_server import FakeOpenAI, Script, final

    r = run_cli("difficulty", str(lf.SEED))
    assert r.returncode == 2 and "--extract-model" in r.stderr and "Traceback" not in r.stderr
    with FakeOpenAI(Script(**{"proposer-extract": [final(lf.extraction())]})) as server:
        r = run_cli("difficulty", str(lf.SEED), "--extract-model", "fake-model", "--base-url", server.url, "--json",
                    env={**os.environ, "OPENAI_API_KEY": "sk-fake"})
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)["rows"][0]
    assert row["L"] == 3 and row["xi_source"] == "llm:fake-model"
    assert [s["scenario"] for s in row["trace"]["steps"]] == [s for s, _ in lf.STEPS]
    assert row["D_T"] == pytest.approx(row["scenario_novelty"] + row["skill_rarity"]) and row["D_T"] > 0


def test_difficulty_with_a_model_prints_its_usage(tmp_path: Path) -> None:
    """The extraction's tokens are shown at the end, and in --json; without a model there is no usage (issue 25)."""
    import os

    from tests.conftest import run_cli
    from tests.fakes import log_forensics as lf
    from tests.fakes.openai_server import FakeOpenAI, Script, final

    env = {**os.environ, "OPENAI_API_KEY": "sk-fake"}
    with FakeOpenAI(Script(**{"proposer-extract": [final(lf.extraction()), final(lf.extraction())]})) as server:
        as_json = run_cli("difficulty", str(lf.SEED), "--extract-model", "fake-model", "--base-url", server.url,
                          "--json", env=env)
        as_table = run_cli("difficulty", str(lf.SEED), "--extract-model", "fake-model", "--base-url", server.url,
                           env=env)
    assert as_json.returncode == 0, as_json.stderr
    (used,) = json.loads(as_json.stdout)["usage"]
    assert used["calls"] >= 1 and used["input_tokens"] > 0 and used["output_tokens"] > 0 and "fake-model" in used["model"]
    assert as_table.returncode == 0, as_table.stderr
    assert "LLM usage" in as_table.stdout and str(used["input_tokens"]) in as_table.stdout
    chain = random_chain(None, 3, 7)
    res = CliRunner().invoke(app, [str(write_task(chain, tmp_path / "t")), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["usage"] == []


def test_an_estimator_that_meters_no_tokens_shows_its_calls_with_tokens_unknown() -> None:
    from types import SimpleNamespace

    from envevo.cli.difficulty_cmd import model_usage

    unmetered = SimpleNamespace(requests=3, model="ref")
    assert model_usage([], unmetered) == [{"role": "p_T estimator", "model": "ref", "calls": 3, "input_tokens": None,
                                          "output_tokens": None, "cost_usd": None}]
    rec = SimpleNamespace(role="estimator", model="ref", input_tokens=20, output_tokens=2, cost_usd=None)
    metered = SimpleNamespace(requests=3, model="ref", meter=SimpleNamespace(records=[rec, rec]))
    assert model_usage([], metered) == [{"role": "estimator", "model": "ref", "calls": 2, "input_tokens": 40,
                                        "output_tokens": 4, "cost_usd": None, "estimated_calls": 0}]


def test_a_failed_extraction_still_shows_the_tokens_it_spent() -> None:
    """The model answered, unusably, every time: the command fails with one line, and the usage of those calls is
    shown all the same, in --json (on stdout, beside the error) and as a table (issue 25)."""
    import os

    from tests.conftest import run_cli
    from tests.fakes import log_forensics as lf
    from tests.fakes.openai_server import FakeOpenAI, Script, text

    env = {**os.environ, "OPENAI_API_KEY": "sk-fake"}
    unusable = [text("I cannot tell what this task is about.") for _ in range(20)]  # more than it asks
    with FakeOpenAI(Script(**{"proposer-extract": unusable[:10]})) as server:
        as_json = run_cli("difficulty", str(lf.SEED), "--extract-model", "fake-model", "--base-url", server.url,
                          "--json", env=env)
        calls = len(server.requests)
    with FakeOpenAI(Script(**{"proposer-extract": unusable[10:]})) as server:
        as_table = run_cli("difficulty", str(lf.SEED), "--extract-model", "fake-model", "--base-url", server.url,
                           env=env)
    assert as_json.returncode == 2 and "Traceback" not in as_json.stderr and "no usable" in as_json.stderr
    data = json.loads(as_json.stdout)
    (used,) = data["usage"]
    assert data["kind"] == "error" and "no usable" in data["error"]
    assert used["calls"] == calls and used["input_tokens"] > 0 and used["output_tokens"] > 0
    assert as_table.returncode == 2 and "LLM usage" in as_table.stderr and str(used["input_tokens"]) in as_table.stderr
