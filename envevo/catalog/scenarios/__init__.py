"""Scenarios, one module per family: where the agent works (see _base.py for the Scenario base)."""

from envevo.catalog.scenarios import certs, config, git, lines, sqlite, textfiles, tree
from envevo.catalog.scenarios._base import CAPABILITIES, RECIPES, ROW_SHAPES, NoRecipe, Scenario, capabilities

# Catalog order (the prior and seeding iterate it, so it is part of every chain's draw).
SCENARIOS: tuple[type[Scenario], ...] = (
    *lines.SCENARIOS, *textfiles.SCENARIOS, *config.SCENARIOS, *sqlite.SCENARIOS, *git.SCENARIOS,
    tree.NestedTree, tree.SystemdUnits, certs.NginxConfig, tree.JunitReports, tree.MavenProject, certs.CertDirectory,
    certs.CertBundle, tree.TarBackup,
)

__all__ = ["CAPABILITIES", "RECIPES", "ROW_SHAPES", "SCENARIOS", "NoRecipe", "Scenario", "capabilities"]
