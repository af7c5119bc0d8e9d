"""`--mutation` on verify and evolve: its default is the run settings', and a bad value ends in one line."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from envevo.cli.main import app
from envevo.evolve import EvolveConfig, settle_run_config


def _params(name: str) -> dict:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {opt: p for p in command.params for opt in getattr(p, "opts", [])}


def test_the_default_is_the_run_settings_on_verify_and_evolve():
    for name in ("verify", "evolve"):
        option = _params(name)["--mutation"]
        assert option.default == EvolveConfig().mutation == "sample:4"
        assert "sample:N" in option.help


def test_a_bad_value_is_one_line_before_any_work(tmp_path):
    for args in (["verify", str(tmp_path)], ["evolve", str(tmp_path), "--run", str(tmp_path / "run")]):
        result = CliRunner().invoke(app, [*args, "--mutation", "sometimes"])
        assert result.exit_code == 2, result.output
        assert "--mutation 'sometimes': use on, strict, off or sample:N" in result.stderr
        assert "Traceback" not in result.stderr


class _Store:
    def __init__(self, stored):
        self.stored, self.run_dir = stored, "run"

    def run_config(self):
        return self.stored

    def set_run_config(self, value):
        self.stored = value


def test_a_run_stored_before_the_mutation_verifier_resumes_without_it():
    old = EvolveConfig().model_dump(mode="json")
    del old["mutation"]
    assert settle_run_config(_Store(old), EvolveConfig(), resume=True).mutation == "off"  # type: ignore[arg-type]
    stored = EvolveConfig(mutation="on").model_dump(mode="json")
    assert settle_run_config(_Store(stored), EvolveConfig(), resume=True).mutation == "on"  # type: ignore[arg-type]
