"""The false-fail rate: how often the tests reject the reference solution's own answer, written differently.

The probes (`envevo.verify.exploits.false_fail`) run as red-team trials; their outcome is a warning about the task,
never a finding against it: a sound task stays sound, and its report carries the rate in `metrics["false_fail"]`
and one note per probe. A probe counts only when at least one output was reformatted (judged by the reward, as
Harbor judges the oracle, not by solve.sh's exit code); a probe that never reached the tests is said, not counted.
"""

from __future__ import annotations

from pathlib import Path

from envevo.runtime import TrialOutcome


def script_lines(o: TrialOutcome, prefix: str) -> list[str]:
    """The lines of a scripted trial's `agent/script.log` that start with `prefix`, without it."""
    if not o.trial_dir:
        return []
    try:
        text = (Path(o.trial_dir) / "agent" / "script.log").read_text(errors="replace")
    except OSError:
        return []
    return [ln.removeprefix(prefix).strip() for ln in text.splitlines() if ln.startswith(prefix)]


def judge_probes(runs: list[tuple[str, TrialOutcome, str | None]]) -> tuple[list[str], dict[str, object]]:
    """(notes, metrics) of the probe trials: (probe name, outcome, why inconclusive or None)."""
    from envevo.verify.exploits.false_fail import REFORMATTED

    notes: list[str] = []
    rejected: list[str] = []
    accepted: list[str] = []
    for name, o, never_ran in runs:
        where = f" (logs: {o.trial_dir})" if o.trial_dir else ""
        changed = script_lines(o, REFORMATTED)
        why_not = script_lines(o, "not reformatted:")
        if never_ran:
            notes.append(f"{name}: not counted: {never_ran}{where}")
        elif not changed:
            notes.append(f"{name}: not counted: "
                         + (why_not[0] if why_not else "the reference solution wrote no output this probe reformats"))
        elif o.reward is not None and o.reward > 0:
            accepted.append(name)
            notes.append(f"{name}: accepted: {'; '.join(changed[:3])}")
        else:
            rejected.append(name)
            notes.append(f"{name}: false fail: the tests reject the reference answer written differently "
                         f"({'; '.join(changed[:3])}): reward {o.reward}; a warning, not a hack{where}")
    probes = len(rejected) + len(accepted)
    if not runs:
        return notes, {}
    return notes, {"false_fail": {"probes": probes, "rejected": len(rejected), "rejected_by": rejected,
                                  "rate": round(len(rejected) / probes, 4) if probes else None}}
