"""Skills, one module per family: what the agent applies (see _base.py for the Skill base and Block)."""

from envevo.catalog.skills import data, files, git, text
from envevo.catalog.skills._base import Block, Draft, Retry, Skill, StepIO

# Catalog order (the prior and seeding iterate it, so it is part of every chain's draw).
SKILLS: tuple[type[Skill], ...] = (*text.SKILLS, *data.SKILLS, *files.SKILLS, *git.SKILLS)

__all__ = ["SKILLS", "Block", "Draft", "Retry", "Skill", "StepIO"]
