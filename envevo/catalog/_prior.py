"""p_T from catalog priors: how familiar a scenario is for a goal, and a skill within a scenario.

Familiar places and tools (CSV files, logs, grep) carry high weight; rare ones (certificate bundles,
git bisect, comm) low. p(σ | g) normalizes over all scenarios and p(κ | σ, g) over the skills that
apply to σ; the goal's category multiplies the weights of the scenarios and skills it is about.
"""

from __future__ import annotations

import math

from envevo.catalog._goals import CATEGORY_BOOST, GOAL_CATEGORIES, category_of
from envevo.catalog._graph import SCENARIOS, SKILLS, skills_for
from envevo.trace import Difficulty, Trace, difficulty

# What an element outside the catalog (or an impossible pair) costs: rarer than anything in it.
UNKNOWN_P = 1e-4


class CatalogPrior:
    """A ReferenceDistribution over the procedural catalog (natural log)."""

    name = "procedural-catalog-v1"

    def _boost(self, kind: str, item: str, goal: str) -> float:
        cat = category_of(goal)
        return CATEGORY_BOOST if cat is not None and item in GOAL_CATEGORIES[cat][kind] else 1.0

    def p_scenario(self, scenario: str, goal: str) -> float:
        if scenario not in SCENARIOS:
            return UNKNOWN_P
        total = sum(s.weight * self._boost("scenarios", k, goal) for k, s in SCENARIOS.items())
        return SCENARIOS[scenario].weight * self._boost("scenarios", scenario, goal) / total

    def p_skill(self, skill: str, scenario: str, goal: str) -> float:
        options = skills_for(scenario) if scenario in SCENARIOS else []
        if skill not in options:
            return UNKNOWN_P
        total = sum(SKILLS[k].weight * self._boost("skills", k, goal) for k in options)
        return SKILLS[skill].weight * self._boost("skills", skill, goal) / total

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float:
        return -math.log(self.p_scenario(scenario, goal))

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float:
        return -math.log(self.p_skill(skill, scenario, goal))

    def pair_cost(self, scenario: str, skill: str, goal: str) -> float:
        """One pair's share of D_T (memoized: operators score thousands of candidate chains)."""
        cache = self.__dict__.setdefault("_costs", {})
        key = (scenario, skill, goal)
        if key not in cache:
            cache[key] = self.neg_log_p_scenario(scenario, goal) + self.neg_log_p_skill(skill, scenario, goal)
        return cache[key]

    def difficulty(self, trace: Trace) -> Difficulty:
        return difficulty(trace, self)
