"""One progress line per finished verification trial, in words a newcomer reads right: which verifier ran it, and
for a near miss or an exploit which one and what its score means (a near miss's 0.0 is the tests doing their job,
not the reference solution failing)."""

from __future__ import annotations

from envevo.runtime import NOP_AGENT, ORACLE_AGENT, TrialOutcome
from envevo.verify._mutation import mutant_result
from envevo.verify._redteam import ExploitResult, exploit_result


def _score(o: TrialOutcome) -> str:
    return str(float(o.reward)) if o.reward is not None else o.error_kind.value


def trial_line(o: TrialOutcome) -> str:
    """`oracle (reference solution) → passed (1.0)`, `mutant prefix-2of4 → killed (0.0)`,
    `exploit reward_forgery → resisted (0.0)`, `invalid-test (empty solution) → failed, as it should (0.0)`."""
    if o.subject is not None and o.agent == ORACLE_AGENT:  # the solution, changed: a near miss
        said = mutant_result(o)[0]  # a survivor may yet prove equivalent, once its end state is compared
        return f"mutant {o.subject} → {'not killed' if said == 'survived' else said} ({_score(o)})"
    if o.subject is not None:
        said = {ExploitResult.BROKEN: "broke the tests", ExploitResult.RESISTED: "resisted",
                ExploitResult.INCONCLUSIVE: "inconclusive"}[exploit_result(o)[0]]
        return f"exploit {o.subject} → {said} ({_score(o)})"
    if o.agent == ORACLE_AGENT:
        return f"oracle (reference solution) → {'passed' if o.passed else 'did not pass'} ({_score(o)})"
    if o.agent == NOP_AGENT:
        failed = o.reward is not None and o.reward <= 0
        return f"invalid-test (empty solution) → {'failed, as it should' if failed else 'did not fail'} ({_score(o)})"
    return f"{o.agent} → {_score(o)}"
