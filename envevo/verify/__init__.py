"""Verifiers that decide whether a task (or an evolved candidate) is sound: oracle and invalid-test."""

from envevo.verify._rubric import RuleRubric, TaskVerifier
from envevo.verify._run import default_verifiers, verify_candidate, verify_tasks
from envevo.verify._verdict import Verdict, VerifierReport
from envevo.verify._verifiers import InvalidTestVerifier, OracleVerifier, TrialVerifier

__all__ = [
    "InvalidTestVerifier",
    "OracleVerifier",
    "RuleRubric",
    "TaskVerifier",
    "TrialVerifier",
    "Verdict",
    "VerifierReport",
    "default_verifiers",
    "verify_candidate",
    "verify_tasks",
]
