"""The engine contract the CLI keeps to: engines declare capabilities, and the CLI asks those, never a name."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from envevo._registry import Entry
from envevo.catalog import random_chain
from envevo.cli.main import app
from envevo.errors import UserError
from envevo.evolve import (
                           ENGINES,
                           Capability,
                           engine_capabilities,
                           is_targetable,
                           make_engine,
                           uses_llm,
                           uses_models,
)
from envevo.evolve.engines.procedural import ProceduralEngine, write_task

REFUSAL = "error: --target-weakness steers the procedural engine only; use --engine procedural or drop it"


class PlainEngine(ProceduralEngine):
    """The procedural engine without weakness targeting: an engine that lacks the capability."""

    name = "plain"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.OFFLINE_EXTRACTION})


def test_the_registered_engines_declare_what_the_cli_uses() -> None:
    assert engine_capabilities("procedural") == {Capability.WEAKNESS_TARGET, Capability.OFFLINE_EXTRACTION}
    assert engine_capabilities("llm") == {Capability.USES_LLM}
    assert uses_llm("llm") and not uses_llm("procedural")
    with pytest.raises(UserError, match="unknown engine 'nope'"):
        uses_llm("nope")
    engine, checks = make_engine("procedural")
    assert is_targetable(engine) and not uses_models(engine) and [c.name for c in checks] == ["rubric"]


@pytest.fixture
def plain_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ENGINES._entries, "plain", Entry(f"{__name__}:PlainEngine"))


def _refused(args: list[str]) -> list[str]:
    res = CliRunner().invoke(app, ["evolve", *args])
    assert res.exit_code == 2, res.output
    return res.stderr.strip().splitlines()


def test_the_cli_refuses_targeting_an_engine_without_the_capability(tmp_path: Path, plain_engine: None) -> None:
    seed = write_task(random_chain(None, 3, 7), tmp_path / "seed")
    args = [str(seed), "--run", str(tmp_path / "r"), "--target-weakness", str(tmp_path)]
    assert _refused([*args, "--engine", "plain"]) == [REFUSAL]
    # The LLM engine too: refused before its preflight asks the (unreachable) endpoint anything.
    assert _refused([*args, "--engine", "llm", "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"]) == [REFUSAL]
    assert not (tmp_path / "r").exists()


def test_an_engine_gets_its_capabilities_from_the_protocol_and_the_loop_asks_them() -> None:
    from envevo.evolve import EvolveConfig, run_verifiers
    from envevo.verify import RedTeamVerifier
    from tests.evolve.test_evolve_loop import ScriptedEngine

    class Unmetered(ScriptedEngine):  # a `runtime` attribute without USES_LLM: not a model engine, so not used
        runtime = object()

    assert ScriptedEngine.capabilities == frozenset() and not uses_models(Unmetered())
    (red,) = [v for v in run_verifiers(Unmetered(), EvolveConfig(red_team="on")) if isinstance(v, RedTeamVerifier)]
    assert red._agent_options == {}
