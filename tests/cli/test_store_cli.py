"""`envevo lineage show|stats` and `envevo export`, through typer's CliRunner on an app wrapping them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.export_cmd import export
from envevo.cli.lineage_cmd import lineage_app
from envevo.store import LineageStore
from envevo.task import load_task
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of

app = typer.Typer()
app.add_typer(lineage_app, name="lineage")
app.command("export")(export)
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def run(tmp_path: Path) -> Path:
    with LineageStore.open(tmp_path / "run") as s:
        a = s.create_lineage("alpha", tiny_task("alpha"), trace=trace_of(2), difficulty=difficulty_of(2), verified=True)
        b = s.create_lineage("beta", tiny_task("beta"))
        s.commit_generation(
            a,
            1,
            tiny_task("alpha", "alpha 1"),
            direction="length",
            effort="high",
            trace=trace_of(3),
            difficulty=difficulty_of(3),
            verified=True,
        )
        s.add_candidate(a, 2, "scenario", 1, tiny_task("alpha", "rejected"), reasons=["oracle: scored 0.0"])
        s.commit_generation(
            a,
            2,
            tiny_task("alpha", "alpha 2", env="RUN true\n"),
            direction="scenario",
            effort="high",
            trace=trace_of(4),
            difficulty=difficulty_of(4),
            verified=True,
        )
        s.commit_generation(
            b, 1, tiny_task("beta", "beta 1", test="true\n"), direction="skill", effort="high", verified=False
        )
        s.finish_lineage(b, "terminated", "all three directions failed at generation 2")
    return tmp_path / "run"


def test_show_json_carries_each_generation(run: Path) -> None:
    res = invoke("lineage", "show", run, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    lins = {lin["id"]: lin for lin in data["lineages"]}
    assert set(lins) == {"alpha", "beta"}
    gens = lins["alpha"]["generations"]
    assert [(g["generation"], g["direction"], g["L"], g["D_T"], g["mutated"], g["verified"]) for g in gens] == [
        (0, None, 2, 4.0, [], True),
        (1, "length", 3, 6.0, ["instruction"], True),
        (2, "scenario", 4, 8.0, ["instruction", "environment"], True),
    ]
    assert gens[2]["scenario_novelty"] == 6.0 and gens[2]["skill_rarity"] == 2.0 and gens[2]["candidates"] == 1
    assert gens[1]["xi"].startswith("[s0]") and gens[1]["trace"]["goal"]
    assert lins["beta"]["status"] == "terminated" and "all three directions failed" in lins["beta"]["reason"]
    assert lins["beta"]["generations"][1]["mutated"] == ["instruction", "verification"]
    assert lins["beta"]["generations"][1]["L"] is None


def test_show_table_and_lineage_filter(run: Path) -> None:
    res = invoke("lineage", "show", run, "--lineage", "beta")
    assert res.exit_code == 0, res.output
    assert "beta" in res.stdout and "terminated" in res.stdout and "alpha" not in res.stdout
    assert "skill" in res.stdout
    res = invoke("lineage", "show", run, "--lineage", "beta", "--json")
    assert [lin["id"] for lin in json.loads(res.stdout)["lineages"]] == ["beta"]


def test_show_gives_the_mutation_score_of_each_accepted_generation(tmp_path: Path) -> None:
    from envevo.verify import VerifierReport

    with LineageStore.open(tmp_path / "run") as s:
        a = s.create_lineage("alpha", tiny_task("alpha"), trace=trace_of(2), difficulty=difficulty_of(2), verified=True)
        child = tiny_task("alpha", "alpha 1")
        cid = s.add_candidate(a, 1, "length", 1, child, accepted=True)
        s.add_verifier_report(cid, VerifierReport(name="mutation", passed=True,
                                                  metrics={"mutants": 6, "run": 4, "killed": 4, "survived": 0, "score": 1.0}))
        s.commit_generation(a, 1, child, direction="length", effort="high", trace=trace_of(3),
                            difficulty=difficulty_of(3), verified=True)
    gens = json.loads(invoke("lineage", "show", tmp_path / "run", "--json").stdout)["lineages"][0]["generations"]
    assert [g["mutation"] and g["mutation"]["score"] for g in gens] == [None, 1.0]
    table = invoke("lineage", "show", tmp_path / "run").stdout
    assert "yes 4/4" in table and "of n near-miss solutions run" in table


def test_show_includes_usage_outside_any_lineage(run: Path) -> None:
    """Seed extraction and seed judging are metered before the lineage exists (no lineage on the row): `lineage show`
    and its --json show them beside the lineages' own usage, so every token spent is shown (issue 25)."""
    with LineageStore.open(run) as s:
        s.add_usage("proposer", input_tokens=400, output_tokens=40, model="m", lineage_id="alpha", generation=1)
        s.add_usage("proposer-extract", input_tokens=11690, output_tokens=512, model="m", cost_usd=0.25)
        s.add_usage("judge", input_tokens=900, output_tokens=90, model="m")
    res = invoke("lineage", "show", run, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    outside = {u["role"]: (u["calls"], u["input_tokens"], u["output_tokens"], u["cost_usd"])
               for u in data["usage_outside_lineages"]}
    assert outside == {"proposer-extract": (1, 11690, 512, 0.25), "judge": (1, 900, 90, None)}
    assert [u["input_tokens"] for u in data["lineages"][0]["usage"]] == [400]
    res = invoke("lineage", "show", run, "--lineage", "beta")
    assert res.exit_code == 0, res.output
    assert "outside any lineage" in res.stdout and "11690" in res.stdout and "judge" in res.stdout


def test_show_unknown_lineage_is_one_line(run: Path) -> None:
    res = invoke("lineage", "show", run, "--lineage", "gamma")
    assert res.exit_code == 2
    assert "no lineage 'gamma'" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("cmd", [["lineage", "show"], ["lineage", "stats"], ["export", "--out", "x"]])
def test_missing_or_invalid_run_dir_is_one_line(cmd: list[str], tmp_path: Path) -> None:
    for bad, words in ((tmp_path / "missing", "does not exist"), (tmp_path, "no store.sqlite")):
        args = [*cmd[:2], bad, *cmd[2:]] if cmd[0] == "lineage" else ["export", bad, "--out", tmp_path / "x"]
        res = invoke(*args)
        assert res.exit_code == 2, res.output
        assert words in res.output and "Traceback" not in res.output
        assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "missing").exists()


def test_stats_json_and_table(run: Path, tmp_path: Path) -> None:
    res = invoke("lineage", "stats", run, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    g1, g2 = data["generations"]
    assert (g1["generation"], g1["n"], g1["total"]) == (1, 2, 1.0)
    assert g1["rates"] == {"instruction": 1.0, "environment": 0.0, "verification": 0.5, "solution": 0.0}
    assert (g2["n"], g2["rates"]["environment"], g2["total"]) == (1, 1.0, 1.0)
    assert data["mean"]["environment"] == 0.5 and data["mean_total"] == 1.0
    res = invoke("lineage", "stats", run)
    assert res.exit_code == 0 and "mean" in res.stdout and "100.0%" in res.stdout and "by direction" in res.stdout


def test_stats_pools_runs(run: Path, tmp_path: Path) -> None:
    with LineageStore.open(tmp_path / "run2") as s:
        lid = s.create_lineage("gamma", tiny_task("gamma"))
        s.commit_generation(lid, 1, tiny_task("gamma", solve="true\n"), direction="skill", effort="high", verified=True)
    data = json.loads(invoke("lineage", "stats", run, tmp_path / "run2", "--json").stdout)
    assert data["lineages"] == 3 and data["generations"][0]["n"] == 3
    assert data["generations"][0]["total"] == pytest.approx(2 / 3)


def test_export_harbor(run: Path, tmp_path: Path) -> None:
    res = invoke("export", run, "--out", tmp_path / "ds", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["format"] == "harbor" and data["tasks"] == 5
    assert sorted(data["names"]) == ["alpha__g00", "alpha__g01", "alpha__g02", "beta__g00", "beta__g01"]
    for name in data["names"]:
        load_task(tmp_path / "ds" / name)
    again = invoke("export", run, "--out", tmp_path / "ds")
    assert again.exit_code == 2 and "not empty" in again.output
    assert invoke("export", run, "--out", tmp_path / "ds", "--force", "--lineage", "alpha").exit_code == 0
    assert len([p for p in (tmp_path / "ds").iterdir() if p.is_dir()]) == 3


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_export_flat(fmt: str, run: Path, tmp_path: Path) -> None:
    res = invoke("export", run, "--out", tmp_path / "flat", "--format", fmt, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data == {"format": fmt, "out": str(tmp_path / "flat" / f"versions.{fmt}"), "rows": 5}
    assert Path(data["out"]).is_file()
    res = invoke("export", run, "--out", tmp_path / "flat", "--format", "csv")
    assert res.exit_code == 2
