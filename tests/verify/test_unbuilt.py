"""A task whose environment does not build is reported once, and a machine limit is inconclusive, not a fail."""

from __future__ import annotations

import pytest

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.verify import InvalidTestVerifier, OracleVerifier, RedTeamVerifier
from envevo.verify._limits import unreachable_download
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


# Issue 36: machine limits are inconclusive with their cause, never a fail. Excerpts of build logs measured here.
STANDIN_312 = "envevo: base image stood in for on this host: python:3.12-slim → Debian trixie, Python 3.13.5\n"
PANDAS_SOURCE_BUILD = (
    "STEP 1/13: FROM python:3.12-slim\nSTEP 11/13: RUN pip install --no-cache-dir pandas==2.1.1\n"
    "Collecting pandas==2.1.1\n  Downloading pandas-2.1.1.tar.gz (4.3 MB)\n"
    "  Preparing metadata (pyproject.toml): finished with status 'error'\n  error: subprocess-exited-with-error\n"
    "      The Meson build system\n  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
    "error: metadata-generation-failed\n\n× Encountered error while generating package metadata.\n"
    'Error: building at STEP "RUN pip install --no-cache-dir pandas==2.1.1": while running runtime: exit status 1\n')
HUB_DOWNLOAD = (
    "STEP 1/12: FROM python:3.13-slim-bookworm\nSTEP 11/12: RUN /bin/sh -c mkdir -p /app/model && python - <<'PY'\n"
    "import urllib.request\nurl = \"https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main/config.json\"\n"
    "PY\nTraceback (most recent call last):\nsocket.gaierror: [Errno -2] Name or service not known\n"
    "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>\n"
    "Error: building at STEP \"RUN /bin/sh -c mkdir -p /app/model && python - <<'PY'\": exit status 1\n")


def _one_reason(tmp_path, log: str) -> tuple[dict, str]:
    reports = collapse_unbuilt(_reports(_unbuilt(tmp_path, 3, log)))
    (reason,) = [r for rep in reports.values() for r in rep.reasons]
    return reports, reason


def test_a_pinned_wheel_the_standins_python_lacks_is_inconclusive_naming_both_versions(tmp_path):
    reports, reason = _one_reason(tmp_path, STANDIN_312 + PANDAS_SOURCE_BUILD)
    assert all(rep.inconclusive and not rep.passed for rep in reports.values())
    assert reason.startswith("inconclusive: the environment cannot be built on this host (pandas==2.1.1 has no wheel "
                             "for the stand-in's Python 3.13")
    assert "python:3.12-slim, Python 3.12" in reason
    assert reports["oracle"].findings[0].kind == "inconclusive"


def test_a_source_build_that_fails_on_the_python_asked_for_is_the_tasks_failure(tmp_path):
    same = STANDIN_312.replace("python:3.12-slim", "python:3.13-slim")
    reports, reason = _one_reason(tmp_path, same + PANDAS_SOURCE_BUILD.replace("3.12", "3.13"))
    assert reason.startswith("the environment does not build") and not any(r.inconclusive for r in reports.values())
    # No stand-in at all (a real python:3.12 image): the task's own failure too.
    reports, reason = _one_reason(tmp_path / "real", PANDAS_SOURCE_BUILD)
    assert reason.startswith("the environment does not build")


def test_no_distribution_for_this_python_counts_only_with_requires_python(tmp_path):
    nothing = STANDIN_312 + "ERROR: No matching distribution found for pandsa==2.1.1\nError: building at STEP x\n"
    assert _one_reason(tmp_path, nothing)[1].startswith("the environment does not build")  # a typo is the task's
    other = STANDIN_312 + ("ERROR: Ignored the following versions that require a different python version: 1.10.1 "
                           "Requires-Python <3.12,>=3.8\nERROR: No matching distribution found for scipy==1.10.1\n")
    assert "scipy==1.10.1 has no wheel for the stand-in's Python 3.13" in _one_reason(tmp_path / "b", other)[1]


def test_a_download_from_an_unreachable_host_is_inconclusive_naming_the_host(tmp_path):
    reports, reason = _one_reason(tmp_path, HUB_DOWNLOAD)
    assert all(rep.inconclusive and not rep.passed for rep in reports.values())
    assert reason.startswith("inconclusive: the environment cannot be built on this host (a download from "
                             "huggingface.co, which this host cannot reach)")


@pytest.mark.parametrize(("line", "host"), [
    ("curl: (6) Could not resolve host: astral.sh", "astral.sh"),
    ("fatal: unable to access 'https://github.com/x/y.git/': Could not resolve host: github.com", "github.com"),
    ("wget: unable to resolve host address ‘objects.githubusercontent.com’", "objects.githubusercontent.com"),
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
     "with url: /x (Caused by NameResolutionError(\"Failed to resolve 'huggingface.co' ([Errno -2] Name or service "
     "not known)\"))", "huggingface.co"),
    ("npm error request to https://registry.example.com/x failed, reason: getaddrinfo ENOTFOUND registry.example.com",
     "registry.example.com"),
    ("curl: (7) Failed to connect to release-assets.example.org port 443 after 3 ms", "release-assets.example.org"),
])
def test_unreachable_download_names_the_host(line, host):
    assert unreachable_download("STEP 3/4: RUN fetch\n" + line + "\n") == host


def test_a_failure_that_is_no_download_is_not_unreachable():
    assert unreachable_download(RUN_FAILS, PANDAS_SOURCE_BUILD) is None


def test_a_network_policy_the_environment_cannot_switch_is_inconclusive_naming_it(tmp_path):
    """Issue 36: Harbor's refusal of a per-phase policy (an environment without dynamic network policy, e.g. a
    compose one) is no finding against the task."""
    message = ("ValueError: The execution phase network policy differs from a broader setup or shared phase policy, "
               "but this environment cannot change network policy after start. Execution mode: 'no-network'; "
               "broadest mode: 'public'.")
    from envevo.runtime._outcome import policy_refused  # where Harbor's error becomes envevo's typed field

    assert policy_refused(message) == "public setup, no-network agent or verifier"
    assert policy_refused("ValueError: some other setup error") is None
    runs = [TrialOutcome(task="t", agent=a, error_kind=ErrorKind.INFRASTRUCTURE_ERROR, error_message=message,
                         policy_refused=policy_refused(message)) for a in ("oracle", "oracle", "nop")]
    # verify reads the typed field, not the wording: the same words without it are an ordinary infrastructure error
    untyped = [r.model_copy(update={"policy_refused": None}) for r in runs]
    assert collapse_unbuilt(_reports(untyped)) == _reports(untyped)
    reports = collapse_unbuilt(_reports(runs))
    (reason,) = [r for rep in reports.values() for r in rep.reasons]
    assert all(rep.inconclusive and not rep.passed for rep in reports.values())
    assert reason.startswith("inconclusive: no trial could start here under the task's per-phase network policy "
                             "(public setup, no-network agent or verifier)")


def test_a_line_naming_the_host_wins_over_earlier_retries_that_do_not():
    log = ("STEP 13/19: RUN pip install -U pip\n  WARNING: Retrying (Retry(total=4)) after connection broken by "
           "'NewConnectionError(...: Failed to establish a new connection: [Errno -3] Temporary failure in name "
           "resolution')': /packages/pip-26.3-py3-none-any.whl\nERROR: Could not install packages due to an OSError: "
           "HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Max retries exceeded with url: /x (Caused by "
           "NewConnectionError('...: [Errno -3] Temporary failure in name resolution'))\n")
    assert unreachable_download(log) == "files.pythonhosted.org"
