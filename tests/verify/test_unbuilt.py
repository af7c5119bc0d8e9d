"""A task whose environment does not build is reported once, and a machine limit is inconclusive, not a fail."""

from __future__ import annotations

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.verify import InvalidTestVerifier, OracleVerifier, RedTeamVerifier
from envevo.verify._unbuilt import collapse_unbuilt
from tests.conftest import FIXTURES

RUN_FAILS = 'STEP 3/6: RUN exit 3\nError: building at STEP "RUN exit 3": while running runtime: exit status 3\n'
NO_PULL = ("Error: creating build container: initializing source docker://ghcr.io/example-org/base:1.0: pinging "
           'container registry ghcr.io: Get "https://ghcr.io/v2/": dial tcp: lookup ghcr.io: no such host\n')


def _unbuilt(tmp_path, n: int, log: str, kind=ErrorKind.ENVIRONMENT_BUILD_FAILURE) -> list[TrialOutcome]:
    runs = []
    for i in range(n):
        trial = tmp_path / f"t{i}"
        (trial / "environment").mkdir(parents=True)
        (trial / "environment" / "build.log").write_text(log)
        runs.append(TrialOutcome(task="t", agent="oracle", error_kind=kind, trial_dir=trial,
                                 error_message=f"SandboxBuildFailedError: building failed: {log.splitlines()[-1]}"))
    return runs


def _reports(runs: list[TrialOutcome]) -> dict:
    return {"oracle": OracleVerifier(repeats=2).judge(runs[:2]), "invalid_test": InvalidTestVerifier().judge(runs[2:3])}


def test_a_build_the_task_breaks_fails_once_with_its_error(tmp_path):
    reports = collapse_unbuilt(_reports(_unbuilt(tmp_path, 3, RUN_FAILS)))
    reasons = [r for rep in reports.values() for r in rep.reasons]
    assert len(reasons) == 1 and reasons[0].startswith("the environment does not build")
    assert 'STEP 3/6: RUN exit 3' in reasons[0]
    assert not any(rep.passed or rep.inconclusive for rep in reports.values())
    assert reports["invalid_test"].notes == ["not run: the environment does not build (see oracle)"]


def test_an_image_this_host_cannot_pull_is_inconclusive(tmp_path):
    reports = collapse_unbuilt(_reports(_unbuilt(tmp_path, 3, NO_PULL)))
    assert all(rep.inconclusive and not rep.passed for rep in reports.values())
    (reason,) = [r for rep in reports.values() for r in rep.reasons]
    assert "cannot be built on this host (a base image this host cannot pull)" in reason
    assert "--image-map ghcr.io/example-org/base:1.0=" in reason


def test_one_trial_that_built_keeps_every_report(tmp_path):
    runs = _unbuilt(tmp_path, 3, RUN_FAILS)
    runs[2] = TrialOutcome(task="t", agent="nop", reward=0.0, trial_dir=None)
    reports = _reports(runs)
    assert collapse_unbuilt(reports) == reports


def test_static_findings_survive_the_collapse(tmp_path):
    # The red team's static exploits need no trial: their findings still reach the Modifier.
    runs = _unbuilt(tmp_path, 3, RUN_FAILS)
    red = RedTeamVerifier(exploits=["peeking", "reward_forgery"])
    red_report = red.judge_task(FIXTURES / "hackable" / "peeking", [runs[2].model_copy(update={"agent": "x"})])
    reports = collapse_unbuilt({"oracle": OracleVerifier(repeats=2).judge(runs[:2]), "red_team": red_report})
    assert [r for r in reports["red_team"].reasons if "peeking" in r]
    assert not [r for r in reports["red_team"].reasons if "environment_build_failure" in r]


def test_a_copy_from_image_that_cannot_be_pulled_gets_the_pull_hint(tmp_path):
    log = ("STEP 2/7: COPY --from=ghcr.io/example-org/tool:9.9 /tool /bin/tool\nTrying to pull ghcr.io/example-org/tool:9.9...\n"
           "Error: COPY --from=ghcr.io/example-org/tool:9.9: no stage or image found with that name\n")
    reports = collapse_unbuilt(_reports(_unbuilt(tmp_path, 3, log)))
    (reason,) = [r for rep in reports.values() for r in rep.reasons]
    assert all(rep.inconclusive for rep in reports.values())
    assert "--image-map ghcr.io/example-org/tool:9.9=<local or mirrored image>" in reason


def test_a_build_cut_off_by_a_tls_proxy_is_inconclusive_and_names_the_fix(tmp_path):
    log = ("STEP 3/4: RUN pip install tabulate==0.9.0\nWARNING: Retrying ... SSLError(SSLCertVerificationError(1, "
           "'[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain "
           "(_ssl.c:1029)'))\nError: building at STEP \"RUN pip install tabulate==0.9.0\": exit status 1\n")
    reports = collapse_unbuilt(_reports(_unbuilt(tmp_path, 3, log)))
    (reason,) = [r for rep in reports.values() for r in rep.reasons]
    assert all(rep.inconclusive and not rep.passed for rep in reports.values())
    assert "failed certificate verification" in reason and "envevo doctor --trust-host-ca" in reason
