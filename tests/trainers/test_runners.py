"""The runners' capability constants are what export and the adapters check, and what docs/trainers.md shows: the
table is generated from them (a changed constant fails here until the table is regenerated); `envevo export --runner`
refuses, before writing, tasks the runner would lose a guarantee of; each trainer package declares its runners."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.cli.export_cmd import export
from envevo.schedule import ScheduleError
from envevo.store import LineageStore
from envevo.task import load_task
from envevo.trainers import RUNNERS, Capability, Level, Runner, _table, check_tasks, runner_spec, task_configs, task_needs
from tests.conftest import ROOT
from tests.store.test_store_support import difficulty_of, tiny_task, trace_of

SEPARATE = ROOT / "tests" / "fixtures" / "realistic" / "separate-verifier"
TRAINER_PACKAGES = sorted(p.name for p in (ROOT / "envevo" / "trainers").iterdir() if (p / "__init__.py").is_file())

app = typer.Typer()
app.command("export")(export)
app.command("unused")(lambda: None)  # a second command, so `export` stays a subcommand


def invoke(*args: object):
    return CliRunner().invoke(app, ["export", *map(str, args)])


def test_the_docs_table_is_the_constants():
    doc = _table.DOC.read_text(encoding="utf-8")
    assert _table.render(doc) == doc, "run python -m envevo.trainers._table"
    assert _table.main(["--check"]) == 0


def test_a_changed_constant_makes_the_table_disagree(monkeypatch):
    doc = _table.DOC.read_text(encoding="utf-8")
    trl = RUNNERS["trl-harbor"]
    honest = dataclasses.replace(trl, honours={**trl.honours, Capability.NO_NETWORK: trl.honours[Capability.BUILDS_IMAGES]})
    monkeypatch.setitem(RUNNERS, "trl-harbor", honest)
    assert _table.render(doc) != doc


def test_every_trainer_package_declares_its_runners_and_the_registry_holds_them():
    assert TRAINER_PACKAGES == ["openenv", "prime_rl", "skyrl", "trl", "verl"]
    declared = []
    for name in TRAINER_PACKAGES:
        package = importlib.import_module(f"envevo.trainers.{name}")  # light: no framework imported
        for spec in package.RUNNERS:
            assert spec.trainer == name and RUNNERS[spec.name] is spec
            declared.append(spec.name)
    assert {r.name for r in RUNNERS.values() if r.trainer} == set(declared)
    assert all(r.trainer is None or r.trainer in TRAINER_PACKAGES for r in RUNNERS.values())
    for spec in RUNNERS.values():  # every capability has a word, and a runner that drops one says what to do
        assert set(spec.honours) == set(Capability)
        assert all(h.note for h in spec.honours.values() if h.level is Level.DEPENDS)


def test_the_live_trial_adapter_that_loads_here_names_its_runner():
    from envevo.trainers.trl import BASH_ENV, EnvevoBashEnv

    assert isinstance(EnvevoBashEnv(), Runner) and EnvevoBashEnv.runner is BASH_ENV
    assert BASH_ENV.capabilities == frozenset(Capability)


def test_what_a_task_needs():
    config = load_task(SEPARATE).config
    assert task_needs(config) == [Capability.BUILDS_IMAGES, Capability.SEPARATE_VERIFIER, Capability.ARTIFACTS,
                                  Capability.NO_NETWORK]
    assert task_needs(config, images=True)[0] is Capability.PREBUILT_IMAGES
    assert task_needs(tiny_task("plain").config) == [Capability.BUILDS_IMAGES]


def test_a_runner_that_drops_a_need_refuses_in_one_line_and_one_that_keeps_it_does_not():
    tasks = task_configs([SEPARATE])
    with pytest.raises(ScheduleError, match=r"`HarborEnv` does not honour .*separate-verifier: separate verifier, "
                                            r"artifacts / collect hooks, no-network\); use environment_factory"):
        check_tasks(runner_spec("trl-harbor"), tasks)
    with pytest.raises(ScheduleError, match=r"separate-verifier: a Dockerfile build\); export with `--images`"):
        check_tasks(runner_spec("verifiers-harbor"), tasks)
    assert check_tasks(runner_spec("verifiers-harbor"), tasks, images=True) == {}
    for name in ("envevo", "trl-envevo", "skyrl-live", "openenv"):
        assert check_tasks(runner_spec(name), tasks) == {}
    with pytest.warns(UserWarning, match="does not honour"):
        assert check_tasks(runner_spec("trl-harbor"), tasks, allow=True)
    with pytest.raises(ScheduleError, match="unknown runner 'trl'; choose one of envevo, "):
        runner_spec("trl")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    with LineageStore.open(tmp_path / "run") as s:
        s.create_lineage("plain", tiny_task("plain"), trace=trace_of(1), difficulty=difficulty_of(1))
        s.create_lineage("sep", load_task(SEPARATE), trace=trace_of(1), difficulty=difficulty_of(1))
    return tmp_path / "run"


def test_export_refuses_before_writing_what_the_runner_would_drop(run: Path, tmp_path: Path):
    out = tmp_path / "rl"
    res = invoke(run, "--format", "rl", "--out", out, "--runner", "trl-harbor")
    assert res.exit_code == 2 and "sep__g00: separate verifier" in res.output and not out.exists()
    assert len(res.output.strip().splitlines()) == 1
    res = invoke(run, "--format", "rl", "--out", out, "--runner", "verifiers-harbor")
    assert res.exit_code == 2 and "--images" in res.output and not out.exists()
    # the plain lineage alone keeps everything TRL's HarborEnv honours
    assert invoke(run, "--format", "rl", "--out", out, "--runner", "trl-harbor", "--lineage", "plain").exit_code == 0
    res = invoke(run, "--format", "rl", "--out", tmp_path / "rl2", "--runner", "trl-envevo")
    assert res.exit_code == 0 and (tmp_path / "rl2" / "index.parquet").is_file()
    res = invoke(run, "--out", tmp_path / "x", "--runner", "nope")
    assert res.exit_code == 2 and "unknown runner 'nope'" in res.output
    res = invoke(run, "--format", "jsonl", "--out", tmp_path / "x.jsonl", "--runner", "envevo")
    assert res.exit_code == 2 and "--runner needs --format harbor or rl" in res.output


def _top_level_names(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


@pytest.mark.parametrize("name", TRAINER_PACKAGES)
def test_every_public_name_of_a_trainer_package_loads_from_the_module_that_defines_it(name):
    """Checked without the frameworks: each name in __all__ is the package's own, or mapped to a module of the
    package that defines it at top level (what `from envevo.trainers.<name> import X` then loads)."""
    package = importlib.import_module(f"envevo.trainers.{name}")
    lazy = package.__getattr__.names
    for public in package.__all__:
        if public in vars(package):
            continue
        assert public in lazy, f"envevo.trainers.{name}.{public} is in __all__ but not loadable"
        module = ROOT / "envevo" / "trainers" / name / f"{lazy[public]}.py"
        assert public in _top_level_names(module), f"{module} does not define {public}"
    assert set(lazy) <= set(package.__all__)
