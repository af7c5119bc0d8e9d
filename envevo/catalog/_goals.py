"""Goal categories: what a task is for. A category makes its scenarios and skills more expected under p_T."""

from __future__ import annotations

import tomllib
from pathlib import Path

GOAL_CATEGORIES: dict[str, dict] = {
    name: {**c, "scenarios": set(c["scenarios"]), "skills": set(c["skills"])}
    for name, c in tomllib.loads(Path(__file__).with_name("goals.toml").read_text(encoding="utf-8")).items()
}
CATEGORY_BOOST = 2.5


def goal_text(category: str) -> str:
    c = GOAL_CATEGORIES[category]
    return f"{c['title']}: {c['goal']}"


def category_of(goal: str) -> str | None:
    """The category a goal text was written for (goals start with the category title)."""
    for name, c in GOAL_CATEGORIES.items():
        if goal.startswith(c["title"] + ":"):
            return name
    return None
