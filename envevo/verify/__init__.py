"""Verifiers that decide whether a task (or an evolved candidate) is sound: oracle, invalid-test, the red team and
the mutation verifier."""

from envevo.verify._audit import (
                                  AUDIT_RESULTS,
                                  VERIFIER_CLASSES,
                                  audit_record,
                                  end_torn_line,
                                  fail_on_hits,
                                  failure_classes,
                                  load_audit_results,
                                  record_reasons,
                                  summarize_audit,
)
from envevo.verify._config import VerificationConfig
from envevo.verify._drift import DriftBound
from envevo.verify._evidence import reward_of
from envevo.verify._exploit_keys import NOT_REUSED, REUSABLE, Inheriting, exploit_key, resisted_sources
from envevo.verify._feedback import ctrf_failures, run_digest
from envevo.verify._mutants import (
    Mutant,
    WrittenMutant,
    model_mutants,
    no_effect,
    prefix_mutants,
    procedural_mutants,
    shell_problem,
    task_mutants,
    top_level_commands,
)
from envevo.verify._mutation import (
    MutantWriter,
    MutationVerifier,
    choose_mutants,
    killed_keys,
    mutation_score,
    mutation_strict,
    parse_mutation,
    survivors,
)
from envevo.verify._progress import trial_line
from envevo.verify._redteam import RedTeamVerifier, broken_by, choose_exploits, parse_red_team
from envevo.verify._rubric import RuleRubric, TaskVerifier
from envevo.verify._run import default_verifiers, unmet_on_host, verify_candidate, verify_tasks
from envevo.verify._sarif import audit_sarif
from envevo.verify._verdict import Finding, FindingKind, Unmet, Verdict, VerifierReport, findings_from_reasons
from envevo.verify._verifiers import InvalidTestVerifier, OracleVerifier, TaskAttacker, TaskJudge, TrialVerifier

__all__ = [
    "DriftBound",
    "AUDIT_RESULTS",
    "VERIFIER_CLASSES",
    "Finding",
    "FindingKind",
    "Inheriting",
    "InvalidTestVerifier",
    "NOT_REUSED",
    "REUSABLE",
    "Mutant",
    "MutantWriter",
    "MutationVerifier",
    "OracleVerifier",
    "RedTeamVerifier",
    "RuleRubric",
    "TaskAttacker",
    "TaskJudge",
    "TaskVerifier",
    "TrialVerifier",
    "Unmet",
    "Verdict",
    "VerificationConfig",
    "WrittenMutant",
    "VerifierReport",
    "audit_record",
    "audit_sarif",
    "broken_by",
    "choose_exploits",
    "choose_mutants",
    "ctrf_failures",
    "default_verifiers",
    "end_torn_line",
    "exploit_key",
    "fail_on_hits",
    "failure_classes",
    "killed_keys",
    "findings_from_reasons",
    "load_audit_results",
    "model_mutants",
    "mutation_score",
    "mutation_strict",
    "trial_line",
    "no_effect",
    "parse_mutation",
    "parse_red_team",
    "resisted_sources",
    "prefix_mutants",
    "procedural_mutants",
    "record_reasons",
    "reward_of",
    "run_digest",
    "shell_problem",
    "summarize_audit",
    "survivors",
    "task_mutants",
    "top_level_commands",
    "unmet_on_host",
    "verify_candidate",
    "verify_tasks",
]
