"""The catalog: every scenario and skill, the compatibility graph between them, and the tools they use.

A skill fits a scenario when the scenario offers every capability the skill needs (see scenarios/_base.py). The graph is derived from
that rule, so adding a recipe to a scenario widens the graph without touching any skill.
"""

from __future__ import annotations

from functools import cache

from envevo.catalog import scenarios, skills
from envevo.catalog.scenarios import Scenario
from envevo.catalog.skills import Skill

SCENARIOS: dict[str, Scenario] = {cls.id: cls() for cls in scenarios.SCENARIOS}
SKILLS: dict[str, Skill] = {cls.id: cls() for cls in skills.SKILLS}

# Debian bookworm packages: everything any skill's oracle uses, plus what every agent harness needs
# (python3, tmux, procps). The same list goes into every procedural task's Dockerfile.
_BASE_TOOLS = ("python3", "tmux", "procps", "coreutils", "grep", "sed", "gawk", "findutils", "diffutils", "tar", "gzip",
               "jq", "sqlite3", "git", "openssl", "patch", "ca-certificates")
TOOLS: tuple[str, ...] = tuple(sorted(set(_BASE_TOOLS) | {t for s in SKILLS.values() for t in s.tools}))


@cache
def compatible(scenario: str, skill: str) -> bool:
    return scenario in SCENARIOS and skill in SKILLS and SKILLS[skill].fits(SCENARIOS[scenario])


def skills_for(scenario: str) -> list[str]:
    return [k for k in SKILLS if compatible(scenario, k)]


def scenarios_for(skill: str) -> list[str]:
    return [s for s in SCENARIOS if compatible(s, skill)]


def graph() -> dict[str, list[str]]:
    """scenario -> compatible skills."""
    return {s: skills_for(s) for s in SCENARIOS}
