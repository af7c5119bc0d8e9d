"""`envevo seeds pool`: a pool drawn evenly across categories, its composition written beside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envevo.catalog import random_chain
from envevo.cli.main import app
from envevo.errors import UserError
from envevo.evolve.engines.procedural import write_task
from envevo.rollout import POOL_FILE, seed_pool
from envevo.task import load_task

COUNTS = {"ci-triage": 3, "data-reconciliation": 2, "incident-response": 1}


@pytest.fixture(scope="module")
def candidates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("candidates")
    for category, n in COUNTS.items():
        for i in range(n):
            write_task(random_chain(category, 1, i), root / f"{category}-{i}")
    shutil.copytree(root / "ci-triage-0", root / "copy-of-ci-triage-0")  # same content: counted once
    return root


def test_the_pool_has_n_tasks_of_each_category_and_says_so(candidates: Path, tmp_path: Path) -> None:
    doc = seed_pool([candidates], tmp_path / "pool", 2, categories=["ci-triage", "data-reconciliation"], seed=3)
    assert doc["size"] == 4 and doc["categories"] == ["ci-triage", "data-reconciliation"]
    assert doc["composition"] == {"ci-triage": {"available": 3, "drawn": 2},
                                  "data-reconciliation": {"available": 2, "drawn": 2}}
    assert doc["left_out"] == {"incident-response": 1}
    assert [d["path"] for d in doc["duplicates"]] == [str(candidates / "copy-of-ci-triage-0")]
    on_disk = json.loads((tmp_path / "pool" / POOL_FILE).read_text())
    assert on_disk == doc
    copied = sorted((tmp_path / "pool" / "tasks").iterdir())
    assert len(copied) == 4
    cats = [load_task(p).config["metadata"]["category"] for p in copied]
    assert sorted(cats) == ["ci-triage", "ci-triage", "data-reconciliation", "data-reconciliation"]
    assert {t["pool_path"] for t in doc["tasks"]} == {f"tasks/{p.name}" for p in copied}


def test_the_draw_depends_on_the_seed_only(candidates: Path, tmp_path: Path) -> None:
    draws = {s: [t["path"] for t in seed_pool([candidates], tmp_path / f"p{s}", 1, seed=s)["tasks"]] for s in range(6)}
    again = [t["path"] for t in seed_pool([candidates], tmp_path / "again", 1, seed=0)["tasks"]]
    assert again == draws[0]
    assert len({tuple(d) for d in draws.values()}) > 1  # another seed, another pool
    assert all(len(d) == 3 for d in draws.values())  # every category once, by default


def test_a_category_with_too_few_tasks_is_a_clear_error(candidates: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="incident-response has 1; lower --per-category"):
        seed_pool([candidates], tmp_path / "p", 2)
    with pytest.raises(UserError, match="no task has category 'nope'; the tasks have: ci-triage"):
        seed_pool([candidates], tmp_path / "p", 1, categories=["nope"])
    assert not (tmp_path / "p").exists()  # nothing written on an error


def test_an_existing_out_dir_is_replaced_only_when_it_is_a_pool(candidates: Path, tmp_path: Path) -> None:
    seed_pool([candidates], tmp_path / "p", 1)
    with pytest.raises(UserError, match="pass --force"):
        seed_pool([candidates], tmp_path / "p", 1)
    assert seed_pool([candidates], tmp_path / "p", 1, seed=1, overwrite=True)["size"] == 3
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not a previous seed pool"):
        seed_pool([candidates], tmp_path / "other", 1, overwrite=True)
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


def test_cli_json_and_one_line_errors(candidates: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["seeds", "pool", str(candidates), "--per-category", "1", "--categories",
                              "ci-triage, incident-response", "--out", str(tmp_path / "p"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["composition"] == {"ci-triage": {"available": 3, "drawn": 1},
                                  "incident-response": {"available": 1, "drawn": 1}}
    res = runner.invoke(app, ["seeds", "pool", str(candidates), "--per-category", "5", "--out", str(tmp_path / "q")])
    assert res.exit_code == 2 and "too few tasks for --per-category 5" in res.output
    assert "Traceback" not in res.output
