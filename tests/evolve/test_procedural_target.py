"""Weakness-targeted evolution: among admissible edits, the engine picks those that raise the agent's δ_θ."""

import random

from typer.testing import CliRunner

from envevo.catalog import CatalogPrior, random_chain
from envevo.cli.main import app
from envevo.evolve.engines.procedural import WeaknessTarget, candidates, mutate


def _weak_on(skill: str, scenario: str | None = None) -> WeaknessTarget:
    return WeaknessTarget(agent="sim-weak", skills={skill: 1.5}, scenarios={scenario: 1.0} if scenario else {})


def test_a_target_makes_the_edits_raise_the_agents_weakness():
    prior = CatalogPrior()
    hits = untargeted_hits = tried = 0
    for seed in range(8):
        chain = random_chain(None, 3, seed)
        pool = candidates(chain, "skill", "low", random.Random(seed), prior)
        skills = sorted({b for new, _ in pool for (_, b) in new} - {b for _, b in chain.pairs()})
        if not skills:
            continue
        target = _weak_on(skills[seed % len(skills)])
        tried += 1
        new = mutate(chain, "skill", "low", random.Random(seed), prior, target)
        plain = mutate(chain, "skill", "low", random.Random(seed), prior)
        assert new is not None and plain is not None
        hits += target.total(new.pairs()) > target.total(chain.pairs())
        untargeted_hits += target.total(plain.pairs()) > target.total(chain.pairs())
        assert prior.difficulty(new.trace()).D_T > prior.difficulty(chain.trace()).D_T  # still an admissible edit
    assert tried >= 5 and hits == tried and untargeted_hits < tried


def test_without_any_weakness_the_targeted_draw_is_the_untargeted_one():
    chain = random_chain("ci-triage", 3, 1)
    empty = WeaknessTarget(agent="sim-strong")
    for d in ("length", "scenario", "skill"):
        assert mutate(chain, d, "high", random.Random(4), None, empty) == mutate(chain, d, "high", random.Random(4))


def test_weakness_sums_its_two_factors():
    t = WeaknessTarget(agent="a", skills={"git_log": 0.5}, scenarios={"csv_export": 0.25})
    assert t.step("csv_export", "git_log") == 0.75 and t.step("other", "other") == 0.0
    assert t.total([("csv_export", "git_log"), ("x", "git_log")]) == 1.25
    assert t.weakest(1) == [("skill git_log", 0.5)]


def test_the_cli_refuses_targeting_without_a_run_or_with_another_engine(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["evolve", str(tmp_path), "--run", str(tmp_path / "r"), "--by-agent", "sim-weak"])
    assert res.exit_code == 2 and "--target-weakness RUN" in res.output
    res = runner.invoke(app, ["evolve", str(tmp_path), "--run", str(tmp_path / "r"), "--target-weakness",
                              str(tmp_path)])
    assert res.exit_code == 2 and "not a run" in res.output and "Traceback" not in res.output


def test_a_resume_goes_on_toward_the_weakness_the_run_started_with(tmp_path):
    import pytest

    from envevo.errors import UserError
    from envevo.evolve import EvolveConfig, open_run

    started = WeaknessTarget(agent="sim-weak", skills={"git_log": 0.5}, source="/runs/a")
    with open_run(tmp_path / "r", EvolveConfig(weakness_target=started.model_dump(mode="json")), resume=False)[0]:
        pass
    # The source run gained rollouts since: the same target re-estimated has other δ; the stored ones win.
    later = started.model_copy(update={"skills": {"git_log": 0.1, "sed_edit": 0.9}})
    store, cfg = open_run(tmp_path / "r", EvolveConfig(weakness_target=later.model_dump(mode="json")), resume=True)
    store.close()
    assert WeaknessTarget.model_validate(cfg.weakness_target) == started
    for other in (None, started.model_copy(update={"agent": "sim-strong"}).model_dump(mode="json")):
        with pytest.raises(UserError, match="--target-weakness: stored sim-weak from /runs/a"):
            open_run(tmp_path / "r", EvolveConfig(weakness_target=other), resume=True)
