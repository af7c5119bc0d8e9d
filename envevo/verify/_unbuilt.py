"""A task whose environment does not build: one reason, stated once, instead of one per trial.

Every trial of a verification builds the same image; when the build fails, each verifier used to report the same
build error (oracle ×2, invalid-test, every exploit). The image cache no longer rebuilds it (runtime/_image_cache),
and here the verdict names it once. Whose fault it is decides the status:

- a machine limit (a base image this host cannot pull, a build cut off by a TLS-intercepting proxy, a download from
  a host this machine cannot reach, a pinned wheel the stand-in's Python lacks; see _limits.py): inconclusive, since
  no test ran and the task may be sound;
- anything else (a RUN step that fails, a file missing from the build context): a fail against the task.
"""

from __future__ import annotations

from envevo.runtime import ErrorKind, TrialOutcome, cert_failure
from envevo.verify._evidence import pull_failure, read_trial_logs
from envevo.verify._limits import missing_wheel, unreachable_download, unreachable_line
from envevo.verify._verdict import FindingKind, VerifierReport, trial_finding
from envevo.verify._verifiers import explain_error


def machine_limit(o: TrialOutcome) -> str | None:
    """Why this host, not the task, kept the environment from building; None if the task's own build failed."""
    logs = read_trial_logs(o.trial_dir)
    if pull_failure(logs.build_log, logs.exception, o.error_message or "", logs.trial_log):
        return "a base image this host cannot pull"
    if cert_failure(logs.build_log, logs.exception, o.error_message or ""):
        return "HTTPS in the build failed certificate verification, as behind a TLS-intercepting proxy"
    if wheel := missing_wheel(logs.build_log):
        return wheel
    if host := unreachable_download(logs.build_log, logs.exception):
        return unreachable_line(host)
    return None


def policy_refused(o: TrialOutcome) -> str | None:
    """The task's per-phase network policy, when the trial's environment could not enforce it (no trial ran)."""
    if o.error_kind is ErrorKind.OK or o.policy_refused is None:
        return None
    return f"the task's per-phase network policy ({o.policy_refused}), which this environment cannot switch between " \
           "phases"


def _unrunnable(o: TrialOutcome) -> bool:
    return o.error_kind is ErrorKind.ENVIRONMENT_BUILD_FAILURE or policy_refused(o) is not None


def collapse_unbuilt(reports: dict[str, VerifierReport]) -> dict[str, VerifierReport]:
    """The reports unchanged unless every trial of every verifier failed to build (or could not start under the
    task's network policy); then the first trial verifier states it once and the others point to it, keeping their
    findings that need no trial."""
    runs = [o for r in reports.values() for o in r.runs]
    if not runs or not all(_unrunnable(o) for o in runs):
        return reports
    first = next(name for name, r in reports.items() if r.runs)
    cause = explain_error(runs[0])
    if policy := policy_refused(runs[0]):
        limit: str | None = policy
        head = f"inconclusive: no trial could start here under {policy}, so no test ran: {cause}"
    else:
        limit = machine_limit(runs[0])
        head = (f"inconclusive: the environment cannot be built on this host ({limit}), so no test ran: {cause}"
                if limit else f"the environment does not build, so no verifier could run: {cause}")
    out: dict[str, VerifierReport] = {}
    for name, rep in reports.items():
        if not rep.runs:
            out[name] = rep
            continue
        # Findings that needed no trial (a static exploit's) stay; the per-trial errors go (every trial here ended
        # unbuilt or refused, so a finding that says how a trial ended is one of those).
        kept = [f for _, f in rep.stated() if f.error_kind is None]
        said = [trial_finding(name, FindingKind.INCONCLUSIVE if limit else FindingKind.FAILED, runs[0], head, text=head)]
        stated = (said if name == first else []) + kept
        out[name] = rep.model_copy(update={
            "passed": False,
            "inconclusive": limit is not None and not kept,
            "findings": stated + [f for f in rep.findings if f.kind is FindingKind.SKIPPED],
            "notes": rep.notes + ([] if name == first else [f"not run: the environment does not build (see {first})"]),
        })
    return out
