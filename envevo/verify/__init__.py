"""Verifiers that decide whether a task (or an evolved candidate) is sound: oracle, invalid-test and the red team."""

from envevo.verify._redteam import RedTeamVerifier, broken_by, choose_exploits, parse_red_team
from envevo.verify._rubric import RuleRubric, TaskVerifier
from envevo.verify._run import default_verifiers, verify_candidate, verify_tasks
from envevo.verify._verdict import Verdict, VerifierReport
from envevo.verify._verifiers import InvalidTestVerifier, OracleVerifier, TrialVerifier

__all__ = [
    "InvalidTestVerifier",
    "OracleVerifier",
    "RedTeamVerifier",
    "RuleRubric",
    "TaskVerifier",
    "TrialVerifier",
    "Verdict",
    "VerifierReport",
    "broken_by",
    "choose_exploits",
    "default_verifiers",
    "parse_red_team",
    "verify_candidate",
    "verify_tasks",
]
