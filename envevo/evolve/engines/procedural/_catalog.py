"""The catalog: every scenario and skill, the compatibility graph between them, goal categories, tools.

A skill fits a scenario when the scenario offers every recipe the skill needs. The graph is derived from
that rule, so adding a recipe to a scenario widens the graph without touching any skill.
"""

from __future__ import annotations

from functools import cache

from envevo.evolve.engines.procedural import _sc_config, _sc_git, _sc_lines, _sc_sqlite, _sc_tree
from envevo.evolve.engines.procedural import _sk_data, _sk_files, _sk_git, _sk_text
from envevo.evolve.engines.procedural._scenario import Scenario
from envevo.evolve.engines.procedural._skill import Skill

SCENARIOS: dict[str, Scenario] = {
    cls.id: cls() for mod in (_sc_lines, _sc_config, _sc_sqlite, _sc_git, _sc_tree) for cls in mod.SCENARIOS
}
SKILLS: dict[str, Skill] = {cls.id: cls() for mod in (_sk_text, _sk_data, _sk_files, _sk_git) for cls in mod.SKILLS}

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


# Goal categories shift p_T: a category makes its scenarios and skills more expected.
GOAL_CATEGORIES: dict[str, dict] = {
    "incident-response": {
        "title": "Incident response",
        "goal": "Trace what the outage touched across the affected systems and hand the on-call lead one verified result file.",
        "scenarios": {"log_archive", "access_log", "jsonl_events", "sqlite_metrics", "systemd_units", "nginx_config"},
        "skills": {"regex_filter", "awk_aggregate", "sort_uniq_count", "date_arith", "git_log", "wc_count"},
    },
    "security-audit": {
        "title": "Security audit",
        "goal": "Audit accounts, credentials and certificates for the quarterly security review and record the findings.",
        "scenarios": {"passwd_file", "cert_bundle", "cert_directory", "k8s_secrets", "env_file", "nginx_config"},
        "skills": {"permission_repair", "checksum_verify", "openssl_inspect", "base64_decode", "regex_filter", "comm_compare"},
    },
    "data-reconciliation": {
        "title": "Data reconciliation",
        "goal": "Reconcile records that disagree between exports and databases, and deliver the reconciled result.",
        "scenarios": {"csv_export", "sqlite_inventory", "sqlite_tickets", "markdown_table", "json_config", "tar_backup"},
        "skills": {"sql_join", "sql_aggregate", "coreutils_join", "comm_compare", "diff_compare", "python_script"},
    },
    "release-engineering": {
        "title": "Release engineering",
        "goal": "Prepare the release notes input by working out which components changed and how.",
        "scenarios": {"git_app_repo", "git_config_repo", "git_docs_repo", "makefile_project", "maven_project", "tar_backup"},
        "skills": {"git_log", "git_show", "git_bisect", "patch_apply", "tar_gzip", "diff_compare"},
    },
    "config-migration": {
        "title": "Configuration migration",
        "goal": "Carry service settings over to the new configuration layout without losing or corrupting any entry.",
        "scenarios": {"ini_config", "yaml_config", "json_config", "env_file", "properties_file", "xml_config", "systemd_units", "nginx_config"},
        "skills": {"sed_edit", "diff_compare", "patch_apply", "jq_transform", "xml_python", "cut_paste_tr"},
    },
    "capacity-planning": {
        "title": "Capacity planning",
        "goal": "Find where capacity is short and produce the numbers the planning meeting asked for.",
        "scenarios": {"sqlite_metrics", "sqlite_inventory", "markdown_table", "csv_export", "yaml_config", "cron_table"},
        "skills": {"sort_rank", "awk_aggregate", "sql_aggregate", "jq_transform", "python_script", "sort_uniq_count"},
    },
    "backup-recovery": {
        "title": "Backup and recovery",
        "goal": "Check what the backups hold, restore what was lost, and confirm the restored state.",
        "scenarios": {"tar_backup", "nested_tree", "log_archive", "systemd_units", "cert_directory", "junit_reports"},
        "skills": {"tar_gzip", "checksum_verify", "find_predicates", "xargs_batch", "permission_repair", "diff_compare"},
    },
    "ci-triage": {
        "title": "CI triage",
        "goal": "Triage the broken build: find which modules, suites and commits are involved and report them.",
        "scenarios": {"junit_reports", "maven_project", "makefile_project", "git_app_repo", "cron_table", "jsonl_events"},
        "skills": {"xml_python", "git_bisect", "git_log", "find_predicates", "regex_filter", "xargs_batch"},
    },
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
