"""The procedural catalog: its size, a rich compatibility graph, the uniform tool layer, and p_T."""

import math

import pytest

from envevo.catalog import (
    GOAL_CATEGORIES,
    SCENARIOS,
    SKILLS,
    TOOLS,
    UNKNOWN_P,
    CatalogPrior,
    Chain,
    ChainStep,
    random_chain,
    scenarios_for,
    skills_for,
)
from envevo.evolve.engines.procedural import compose
from envevo.trace import difficulty


def test_catalog_is_large_and_the_graph_rich():
    assert len(SCENARIOS) >= 24 and len(SKILLS) >= 24
    for sc in SCENARIOS:
        assert len(skills_for(sc)) >= 3, sc
    for sk in SKILLS:
        assert len(scenarios_for(sk)) >= 3, sk


def test_every_procedural_task_gets_the_same_sorted_tool_layer():
    assert list(TOOLS) == sorted(TOOLS)
    assert {"python3", "tmux", "procps"} <= set(TOOLS)
    a = compose(random_chain("incident-response", 3, 1)).read_text("environment/Dockerfile")
    b = compose(random_chain("release-engineering", 4, 2)).read_text("environment/Dockerfile")
    run = [line for line in a.splitlines() if line.startswith("RUN apt-get")]
    assert len(run) == 1 and run == [line for line in b.splitlines() if line.startswith("RUN apt-get")]
    assert a.splitlines()[[i for i, x in enumerate(a.splitlines()) if x.startswith("FROM")][0]] == "FROM debian:bookworm-slim"
    assert " ".join(TOOLS) in run[0] and "http" not in a


@pytest.mark.parametrize("category", [None, *GOAL_CATEGORIES])
def test_prior_is_normalized(category):
    p = CatalogPrior()
    goal = random_chain(category, 2, 3).goal if category else "an unrelated goal"
    assert math.isclose(sum(p.p_scenario(s, goal) for s in SCENARIOS), 1.0)
    for sc in SCENARIOS:
        assert math.isclose(sum(p.p_skill(k, sc, goal) for k in skills_for(sc)), 1.0)


def test_common_places_and_tools_are_likelier_than_rare_ones():
    p, goal = CatalogPrior(), "an unrelated goal"
    assert p.p_scenario("csv_export", goal) > p.p_scenario("cert_bundle", goal)
    assert p.p_scenario("log_archive", goal) > p.p_scenario("git_docs_repo", goal)
    assert p.p_skill("regex_filter", "csv_export", goal) > p.p_skill("comm_compare", "csv_export", goal)
    assert p.p_skill("git_log", "git_app_repo", goal) > p.p_skill("git_bisect", "git_app_repo", goal)
    assert p.p_skill("git_bisect", "csv_export", goal) == UNKNOWN_P  # not applicable there


def test_a_goal_category_shifts_the_weights_toward_its_subjects():
    p = CatalogPrior()
    audit = random_chain("security-audit", 2, 1).goal
    other = random_chain("capacity-planning", 2, 1).goal
    assert p.p_scenario("cert_directory", audit) > p.p_scenario("cert_directory", other)
    assert p.p_skill("permission_repair", "nested_tree", audit) > p.p_skill("permission_repair", "nested_tree", other)


def test_d_t_is_exact_for_a_chain():
    p = CatalogPrior()
    chain = random_chain("ci-triage", 4, 11)
    d = difficulty(chain.trace(), p)
    want = sum(-math.log(p.p_scenario(s.scenario, chain.goal)) - math.log(p.p_skill(s.skill, s.scenario, chain.goal))
               for s in chain.steps)
    assert d.L == 4 and math.isclose(d.D_T, want, abs_tol=1e-5)
    assert math.isclose(d.scenario_novelty + d.skill_rarity, d.D_T, abs_tol=1e-5)


def test_unknown_elements_are_rarer_than_anything_in_the_catalog():
    p = CatalogPrior()
    worst = max(p.neg_log_p_scenario(s, "g") for s in SCENARIOS)
    assert p.neg_log_p_scenario("a-scenario-we-never-heard-of", "g") > worst
    chain = Chain(goal="g", category="ci-triage", seed=1, steps=(ChainStep(scenario="csv_export", skill="regex_filter", seed=1),))
    assert math.isfinite(difficulty(chain.trace(), p).D_T)
