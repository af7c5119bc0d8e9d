"""Verifiers that decide whether a task (or an evolved candidate) is sound: oracle and invalid-test."""

from envevo.verify._run import default_verifiers, verify_tasks
from envevo.verify._verdict import Verdict, VerifierReport
from envevo.verify._verifiers import InvalidTestVerifier, OracleVerifier, TrialVerifier

__all__ = [
    "InvalidTestVerifier",
    "OracleVerifier",
    "TrialVerifier",
    "Verdict",
    "VerifierReport",
    "default_verifiers",
    "verify_tasks",
]
