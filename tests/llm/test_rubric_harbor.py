"""The judge's rubric: Harbor's default rubric, as the installed package ships it, plus envevo's evolution criteria,
scored against a threshold with critical criteria rather than "any fail rejects"."""

import tomllib

import pytest

from envevo.errors import UserError
from envevo.llm import Judgement, default_rubric, load_rubric, score
from envevo.llm._rubric import harbor_rubric_path

EVOLUTION = ["realizes_plan", "consistent_components", "drift"]
CRITICAL = {"anti_cheating_measures", "tests_or_solution_in_image", "realizes_plan"}
HEAVY = {"behavior_in_task_description", "hardcoded_solution", "realizes_plan", "consistent_components"}  # weight 2


def harbor_criteria():
    return tomllib.loads(harbor_rubric_path().read_text())["criteria"]


def judged(rubric, **verdicts):
    return [Judgement(name=c.name, reason="r", verdict=verdicts.get(c.name, "pass")) for c in rubric.criteria]


def test_the_task_rubric_is_harbors_default_with_its_guidance_then_the_evolution_criteria():
    rubric = default_rubric("task")
    harbor = harbor_criteria()
    assert len(harbor) == 11  # harbor 0.26's default rubric
    assert [c.name for c in rubric.criteria] == [c["name"] for c in harbor] + EVOLUTION
    by_name = {c.name: c for c in rubric.criteria}
    for c in harbor:  # description and guidance as Harbor wrote them
        assert by_name[c["name"]].description == c["description"] and by_name[c["name"]].guidance == c["guidance"]
    assert {"informative_test_structure", "structured_data_schema", "test_deps_in_image"} <= set(by_name)
    assert {c.name for c in rubric.criteria if c.required} == CRITICAL
    assert {c.name for c in rubric.criteria if c.weight == 2} == HEAVY and {c.weight for c in rubric.criteria} == {1, 2}
    assert [c.name for c in rubric.criteria if c.evolution] == EVOLUTION
    assert rubric.version.startswith("2+harbor@")  # an edit of Harbor's file shows in the recorded version
    # The judge sees the guidance, and which criteria are critical.
    brief = rubric.brief()
    assert "guidance: Test-only dependencies should be installed in tests" in brief
    assert "- anti_cheating_measures (weight 1, critical):" in brief and "- hardcoded_solution (weight 2):" in brief


def test_a_seed_is_judged_without_the_evolution_criteria():
    seed = default_rubric("task").for_seed()
    assert [c.name for c in seed.criteria] == [c["name"] for c in harbor_criteria()]


def test_harbors_own_rule_on_test_time_installs_is_kept():
    """The rubric must not push test tools into the image: Harbor's test_deps_in_image fails exactly that, and
    pinned_dependencies no longer forbids downloads while the tests run."""
    by_name = {c.name: c for c in default_rubric("task").criteria}
    assert "installed in the test.sh script instead" in by_name["test_deps_in_image"].description
    assert "Nothing is downloaded while the tests run" not in by_name["pinned_dependencies"].description


def test_scoring_tolerates_one_minor_slip_or_two_rejects_more_and_any_critical_fail_rejects():
    rubric = default_rubric("task")  # 14 criteria weighing 18 in all; threshold 0.8, so up to 3.6 may fail
    assert rubric.threshold == 0.8
    assert score(rubric, judged(rubric)) == (True, 1.0)
    ok, share = score(rubric, judged(rubric, typos="fail"))
    assert ok and share == pytest.approx(17 / 18)
    assert score(rubric, judged(rubric, typos="fail", informative_test_structure="fail", drift="fail"))[0]  # 15/18
    assert score(rubric, judged(rubric, hardcoded_solution="fail", typos="fail"))[0]  # 15/18
    assert not score(rubric, judged(rubric, hardcoded_solution="fail", behavior_in_task_description="fail"))[0]  # 14/18
    assert not score(rubric, judged(rubric, **dict.fromkeys(
        ["typos", "informative_test_structure", "drift", "pinned_dependencies"], "fail")))[0]  # 14/18
    for name in CRITICAL:
        assert not score(rubric, judged(rubric, **{name: "fail"}))[0], name
    # n/a does not count either way.
    assert score(rubric, judged(rubric, structured_data_schema="n/a", pinned_dependencies="n/a")) == (True, 1.0)


def test_the_false_rejection_rate_the_choice_is_documented_with():
    """docs/llm.md: with each criterion falsely failed 5% of the time, independently, "any fail rejects" over these
    14 criteria would reject 51% of good candidates; this scoring rejects 16%, of which 14 points are the three
    critical criteria. A calculation over the rubric as loaded, not a measurement of any model."""
    import itertools

    rubric, p = default_rubric("task"), 0.05
    rejected = 0.0
    for fails in itertools.product([False, True], repeat=len(rubric.criteria)):
        verdicts = [Judgement(name=c.name, reason="r", verdict="fail" if f else "pass")
                    for c, f in zip(rubric.criteria, fails, strict=True)]
        if not score(rubric, verdicts)[0]:
            rejected += p ** sum(fails) * (1 - p) ** (len(fails) - sum(fails))
    assert rejected == pytest.approx(0.156, abs=0.001)
    assert 1 - (1 - p) ** len(rubric.criteria) == pytest.approx(0.512, abs=0.001)


def test_a_criterion_the_parent_failed_is_excused():
    rubric = default_rubric("task")
    verdicts = judged(rubric, anti_cheating_measures="fail", typos="fail")
    assert not score(rubric, verdicts)[0]
    ok, share = score(rubric, verdicts, excused={"anti_cheating_measures"})
    assert ok and share == pytest.approx(16 / 17)


def test_a_user_rubric_can_make_a_harbor_criterion_critical_reweigh_one_and_add_its_own(tmp_path):
    f = tmp_path / "house.toml"
    f.write_text('name = "house"\ncritical = ["typos"]\nweights = { drift = 3.0 }\n[[criteria]]\n'
                 'name = "logs_read_only"\nrequired = true\ndescription = "Inputs stay read-only."\n')
    rubric = default_rubric("task").merged([load_rubric(f)])
    assert not score(rubric, judged(rubric, typos="fail"))[0]
    assert not score(rubric, judged(rubric, logs_read_only="fail"))[0]
    assert {c.name: c.weight for c in rubric.criteria}["drift"] == 3.0
    assert rubric.threshold == 0.8 and "house@1" in rubric.version


def test_a_critical_name_that_names_nothing_is_one_clear_error(monkeypatch):
    from envevo.llm import _rubric

    real = _rubric.parse_rubric

    def with_typo(text, where):
        r = real(text, where)
        return r.model_copy(update={"critical": [*r.critical, "anti_cheat"]}) if r.base == "harbor" else r

    monkeypatch.setattr(_rubric, "parse_rubric", with_typo)
    with pytest.raises(UserError, match="critical names no criterion: anti_cheat"):
        default_rubric("task")


def test_harbors_rubric_is_found_without_importing_harbor():
    import subprocess
    import sys

    code = ("import sys; from envevo.llm import default_rubric; default_rubric('task'); "
            "print(any(m == 'harbor' or m.startswith('harbor.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
