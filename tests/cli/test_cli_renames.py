"""One name per thing (issue 24 §5): every renamed option works under its new name, and its old spelling still works
for scripts, with one deprecation line naming the release that removes it. The commands run in-process; the library
call behind each is either cheap or replaced by a fake that records what it was given, so no sandbox starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envevo.catalog import random_chain
from envevo.cli._common import REMOVED_IN
from envevo.cli.main import app
from envevo.errors import UserError
from envevo.evolve.engines.procedural import write_task
from envevo.rollout import RolloutSummary

REMOVAL = f"will be removed in envevo {REMOVED_IN}"


def invoke(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def deprecations(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "deprecated" in line]


def assert_one_deprecation(result, old: str, new: str) -> None:
    [line] = deprecations(result)
    assert old in line and new in line and REMOVAL in line, line


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    return write_task(random_chain(None, 2, 1), tmp_path / "seed")


@pytest.fixture
def no_preflight(monkeypatch):
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)


# ---- the run store: --run ---------------------------------------------------------------------------------

@pytest.fixture
def opened(monkeypatch) -> list[Path]:
    """The run dir `evolve` opens; the run stops there, before any sandbox."""
    seen: list[Path] = []

    def fake_open_run(run_dir, *_, **__):  # the run's settings are not what is tested here
        seen.append(Path(run_dir))
        raise UserError("stopped at open_run")

    monkeypatch.setattr("envevo.evolve.open_run", fake_open_run)
    return seen


@pytest.mark.parametrize("flag", ["--run", "--out"])
def test_evolve_writes_the_run_given_by_run_or_its_old_spelling_out(flag, seed, tmp_path, no_preflight, opened):
    result = invoke("evolve", seed, flag, tmp_path / "run")
    assert "stopped at open_run" in result.stderr and result.exit_code == 2
    assert opened == [tmp_path / "run"]
    if flag == "--out":
        assert_one_deprecation(result, "evolve --out", "--run")
    else:
        assert deprecations(result) == []


def test_evolve_without_a_run_and_with_both_spellings_is_one_line(seed, tmp_path) -> None:
    missing = invoke("evolve", seed)
    assert missing.exit_code == 2 and "give its dir with --run RUN" in missing.stderr
    both = invoke("evolve", seed, "--run", tmp_path / "a", "--out", tmp_path / "b")
    assert both.exit_code == 2 and "give only --run" in both.stderr


@pytest.fixture
def rolled_out(monkeypatch) -> list[Path]:
    """The store each rollout is recorded in; the trials themselves are faked."""
    stores: list[Path] = []

    async def fake_rollout(tasks, agent, model, k, *, store, **_):
        stores.append(store.run_dir)
        return [RolloutSummary(task=tasks[0].name, agent=agent, n=0, passes=0)]

    monkeypatch.setattr("envevo.rollout.rollout", fake_rollout)
    return stores


@pytest.mark.parametrize("flag", ["--run", "--store"])
def test_rollout_records_task_dirs_in_the_run_given_by_run_or_store(flag, seed, tmp_path, no_preflight, rolled_out):
    result = invoke("rollout", seed, "-k", "1", flag, tmp_path / "run", "--json")
    assert result.exit_code == 0, result.stderr
    assert rolled_out == [(tmp_path / "run").resolve()] and (tmp_path / "run" / "store.sqlite").is_file()
    if flag == "--store":
        assert_one_deprecation(result, "rollout --store", "--run")
    else:
        assert deprecations(result) == []


@pytest.fixture
def selected(monkeypatch) -> list[dict]:
    """What `seeds select` asks the library for."""
    calls: list[dict] = []

    async def fake_select(tasks, run, out_dir, **kw):
        calls.append({"run": run, "agent": kw["agent"]})
        return {"tasks": [], "selected": []}

    monkeypatch.setattr("envevo.rollout.select_seeds", fake_select)
    return calls


@pytest.mark.parametrize("run_flag,agent_flag", [("--run", "--by-agent"), ("--rollouts", "--agent")])
def test_seeds_select_reads_the_run_and_the_agent_filter_under_either_name(run_flag, agent_flag, seed, tmp_path,
                                                                           selected) -> None:
    result = invoke("seeds", "select", seed, run_flag, tmp_path / "run", agent_flag, "sim-weak", "--no-verify",
                    "--json")
    assert result.exit_code == 0, result.stderr
    assert selected == [{"run": tmp_path / "run", "agent": "sim-weak"}]
    if run_flag == "--rollouts":
        old = deprecations(result)
        assert len(old) == 2 and all(REMOVAL in line for line in old)
        assert any("--rollouts" in line and "use --run" in line for line in old)
        assert any("--agent" in line and "use --by-agent" in line for line in old)
    else:
        assert deprecations(result) == []


def test_seeds_select_needs_a_run(seed, selected) -> None:
    result = invoke("seeds", "select", seed, "--no-verify")
    assert result.exit_code == 2 and "--run RUN" in result.stderr and selected == []


@pytest.mark.parametrize("args,old", [(["--run", "/nonexistent/run"], None),
                                      (["--pool", "/nonexistent/run"], "schedule simulate --pool"),
                                      (["--lineages", "/nonexistent/run"], "schedule simulate --lineages")])
def test_schedule_simulate_takes_a_run_under_each_name(args, old) -> None:
    result = invoke("schedule", "simulate", *args, "--steps", "1")
    assert result.exit_code == 2 and "--run '/nonexistent/run' is not a run directory" in result.stderr
    if old is None:
        assert deprecations(result) == []
    else:
        assert_one_deprecation(result, old, "--run")


def test_schedule_simulate_old_pool_synthetic_is_the_default_pool() -> None:
    args = ["schedule", "simulate", "--steps", "1", "--repeats", "1", "--schedulers", "el", "--json"]
    new, old = invoke(*args), invoke(*args, "--pool", "synthetic")
    assert new.exit_code == old.exit_code == 0, old.stderr
    assert json.loads(new.stdout)["pool"] == json.loads(old.stdout)["pool"]
    assert deprecations(new) == []
    assert_one_deprecation(old, "--pool synthetic", "no --run")


# ---- whose rollouts count: --by-agent, --by-model --------------------------------------------------------------

@pytest.mark.parametrize("flags,old", [(["--by-agent", "nobody"], None), (["--agent", "nobody"], "difficulty --agent"),
                                       (["--by-model", "openai:none"], None),
                                       (["--model", "openai:none"], "difficulty --model")])
def test_difficulty_weakness_filters_rollouts_under_either_name(flags, old, procedural_run) -> None:
    run, _ = procedural_run
    result = invoke("difficulty", run, "--weakness", *flags)
    # the filter reaches the library: no rollout of the run is by that agent or model
    assert result.exit_code == 2 and "has no rollouts of its versions by" in result.stderr
    assert ("nobody" if "nobody" in flags else "openai/none") in result.stderr
    if old is None:
        assert deprecations(result) == []
    else:
        assert_one_deprecation(result, old, "--by-" + flags[0].removeprefix("--"))


@pytest.mark.parametrize("flag", ["--by-agent", "--agent"])
def test_evolve_weakness_agent_under_either_name(flag, seed, tmp_path, no_preflight, opened) -> None:
    result = invoke("evolve", seed, "--run", tmp_path / "run", flag, "sim-weak")
    assert result.exit_code == 2 and "--by-agent names whose weakness to target" in result.stderr
    if flag == "--agent":
        assert_one_deprecation(result, "evolve --agent", "--by-agent")
    else:
        assert deprecations(result) == []


# ---- envevo.toml: --config --------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--config", "--llm-config"])
def test_evolve_reads_envevo_toml_from_config_or_llm_config(flag, seed, tmp_path, no_preflight, opened) -> None:
    missing = tmp_path / "nowhere" / "envevo.toml"
    result = invoke("evolve", seed, "--run", tmp_path / "run", "--engine", "llm", flag, missing)
    assert result.exit_code == 2 and f"config file {missing} does not exist" in result.stderr.replace("\n", "")
    if flag == "--llm-config":
        assert_one_deprecation(result, "--llm-config", "--config")
    else:
        assert deprecations(result) == []


@pytest.mark.parametrize("flag", ["--config", "--llm-config"])
def test_rubric_learn_reads_envevo_toml_from_config_or_llm_config(flag, procedural_run, tmp_path) -> None:
    from envevo.llm import record_review
    from envevo.store import LineageStore

    run, _ = procedural_run
    with LineageStore.open(run, create=False) as store:
        record_review(store, "seed@1", accept=False, issue="the instruction names the answer")
    missing = tmp_path / "nowhere" / "envevo.toml"
    result = invoke("rubric", "learn", run, flag, missing, "--yes")
    assert result.exit_code == 2 and f"config file {missing} does not exist" in result.stderr.replace("\n", "")
    if flag == "--llm-config":
        assert_one_deprecation(result, "--llm-config", "--config")
    else:
        assert deprecations(result) == []


# ---- the old spellings stay out of help and the reference ----------------------------------------------------

@pytest.mark.parametrize("path,old", [(("evolve",), "--out"), (("evolve",), "--llm-config"), (("evolve",), "--agent"),
                                      (("rollout",), "--store"), (("seeds", "select"), "--rollouts"),
                                      (("seeds", "select"), "--agent"), (("difficulty",), "--agent"),
                                      (("difficulty",), "--model"), (("rubric", "learn"), "--llm-config"),
                                      (("schedule", "simulate"), "--pool")])
def test_old_spellings_are_hidden(path, old) -> None:
    import typer

    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    [param] = [p for p in command.params if old in getattr(p, "opts", [])]
    assert param.hidden and "Deprecated" in (param.help or "")


# ---- one meaning per name: --repeats, --synthetic-generations, --rubric (issue 33) ------------------------------

def test_schedule_simulate_runs_per_scheduler_are_repeats_and_its_pool_generations_are_synthetic() -> None:
    """`--seeds` meant seed tasks elsewhere and `--generations` what evolve makes: simulate's runs per scheduler are
    --repeats and its synthetic pool's depth --synthetic-generations; the old spellings give the same result."""
    base = ["schedule", "simulate", "--steps", "1", "--schedulers", "el", "--synthetic-lineages", "2", "--json"]
    new = invoke(*base, "--repeats", "2", "--synthetic-generations", "3")
    old = invoke(*base, "--seeds", "2", "--generations", "3")
    assert new.exit_code == old.exit_code == 0, old.stderr
    assert deprecations(new) == []
    said = deprecations(old)
    assert len(said) == 2 and all(REMOVAL in line for line in said)
    assert any("--seeds" in line and "use --repeats" in line for line in said)
    assert any("--generations" in line and "use --synthetic-generations" in line for line in said)
    runs = [sorted((r["scheduler"], r["seed"]) for r in json.loads(res.stdout)["runs"]) for res in (new, old)]
    assert runs[0] == runs[1] and len(runs[0]) == 2


def test_rubric_learn_reads_its_old_rubric_file_spelling_with_one_line(tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    old = invoke("rubric", "learn", run, "--rubric-file", tmp_path / "r.toml")
    assert old.exit_code == 2 and "no rejected versions" in old.stderr  # it went on past the option
    assert_one_deprecation(old, "--rubric-file", "use --rubric")
    both = invoke("rubric", "learn", run, "--rubric-file", tmp_path / "r.toml", "--rubric", tmp_path / "s.toml")
    assert both.exit_code == 2 and "give only --rubric" in both.stderr
