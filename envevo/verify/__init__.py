"""Verifiers that decide whether a task (or an evolved candidate) is sound: oracle, invalid-test and the red team."""

from envevo.verify._audit import (
                                  AUDIT_RESULTS,
                                  audit_record,
                                  end_torn_line,
                                  failure_classes,
                                  load_audit_results,
                                  record_reasons,
                                  summarize_audit,
)
from envevo.verify._drift import DriftBound
from envevo.verify._evidence import reward_of
from envevo.verify._feedback import ctrf_failures, run_digest
from envevo.verify._redteam import RedTeamVerifier, broken_by, choose_exploits, parse_red_team
from envevo.verify._rubric import RuleRubric, TaskVerifier
from envevo.verify._run import default_verifiers, unmet_on_host, verify_candidate, verify_tasks
from envevo.verify._verdict import Unmet, Verdict, VerifierReport
from envevo.verify._verifiers import InvalidTestVerifier, OracleVerifier, TrialVerifier

__all__ = [
    "DriftBound",
    "AUDIT_RESULTS",
    "InvalidTestVerifier",
    "OracleVerifier",
    "RedTeamVerifier",
    "RuleRubric",
    "TaskVerifier",
    "TrialVerifier",
    "Unmet",
    "Verdict",
    "VerifierReport",
    "audit_record",
    "broken_by",
    "choose_exploits",
    "ctrf_failures",
    "default_verifiers",
    "end_torn_line",
    "failure_classes",
    "load_audit_results",
    "parse_red_team",
    "record_reasons",
    "reward_of",
    "run_digest",
    "summarize_audit",
    "unmet_on_host",
    "verify_candidate",
    "verify_tasks",
]
