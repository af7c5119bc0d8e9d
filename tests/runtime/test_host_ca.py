"""Trusting the host's CA bundle in builds and containers, without touching the image's own CA store; and the
one-line verdict of a build that failed certificate verification. No engine runs here (tests/sandbox/test_tls_proxy.py
runs the real thing)."""

import asyncio
from pathlib import Path

import pytest

from envevo.runtime import ErrorKind, TrialOutcome, _host_ca
from envevo.runtime._cert_failure import FIX, cert_failure, cert_failure_line
from envevo.runtime._compose_env import _NoNetworkCompose, trust_overlay
from envevo.verify._verifiers import explain_error
from tests.conftest import FIXTURES

VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS")


@pytest.fixture
def trusted(tmp_path, monkeypatch):
    bundle = tmp_path / "host-bundle.crt"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIfake\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("ENVEVO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(_host_ca.ENV_VAR, str(bundle))
    return bundle


@pytest.fixture
def untrusted(monkeypatch, tmp_path):
    monkeypatch.setenv("ENVEVO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(_host_ca.ENV_VAR, "")  # set and empty: off for this process, whatever doctor recorded


def test_nothing_is_added_when_the_host_ca_is_not_trusted(untrusted, tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    assert _host_ca.ca_env() == {} and _host_ca.volume_args() == [] and _host_ca.env_args() == []
    with _host_ca.BuildTrust("podman", tmp_path / "Dockerfile") as args:
        assert args == []


def test_containers_get_the_bundle_beside_the_image_store_never_over_it(trusted):
    env = _host_ca.ca_env()
    assert set(VARIABLES) <= set(env) and {env[v] for v in VARIABLES} == {"/run/envevo-host-ca/ca-bundle.crt"}
    assert env["APT_CONFIG"] == "/run/envevo-host-ca/apt.conf" and env["WGETRC"] == "/run/envevo-host-ca/wgetrc"
    flag, spec = _host_ca.volume_args()
    source, target, mode = spec.split(":")
    assert flag == "--volume" and target == "/run/envevo-host-ca" and mode == "ro"
    assert "/etc/ssl" not in " ".join([*_host_ca.volume_args(), *_host_ca.env_args()])
    folder = Path(source)
    assert (folder / "ca-bundle.crt").read_bytes() == trusted.read_bytes()
    assert 'Acquire::https::CAInfo "/run/envevo-host-ca/ca-bundle.crt";' in (folder / "apt.conf").read_text()
    assert (folder / "wgetrc").read_text() == "ca_certificate = /run/envevo-host-ca/ca-bundle.crt\n"


def test_a_changed_bundle_gets_its_own_folder_so_a_running_container_keeps_its_mount(trusted):
    first = _host_ca.host_dir()
    trusted.write_text(trusted.read_text() + "-----BEGIN CERTIFICATE-----\nMIInew\n-----END CERTIFICATE-----\n")
    second = _host_ca.host_dir()
    assert first != second and first is not None and second is not None
    assert (first / "ca-bundle.crt").read_bytes() != (second / "ca-bundle.crt").read_bytes()
    assert _host_ca.host_dir() == second  # unchanged: the same folder, not rewritten


def test_every_stage_declares_the_variables_as_args_and_nothing_else_changes():
    text = ("# syntax=docker/dockerfile:1\nARG BASE=python:3.13-slim\nFROM ${BASE} AS build\nRUN pip install a \\\n"
            "  b\nRUN <<EOF\nFROM not-an-instruction\nEOF\n  from debian:bookworm-slim\nCOPY --from=build /a /a\n")
    out = _host_ca.declare_args(text)
    declared = "".join(f"ARG {v}\n" for v in _host_ca.variables())
    assert out.count(declared) == 2
    assert out.startswith("# syntax=docker/dockerfile:1\nARG BASE=python:3.13-slim\nFROM ${BASE} AS build\n" + declared)
    assert "RUN pip install a \\\n  b\nRUN <<EOF\nFROM not-an-instruction\nEOF\n  from debian:bookworm-slim\n" + declared in out
    assert out.replace(declared, "") == text
    assert "ENV " not in out  # an ARG reaches the RUN steps, and is not part of the image's configuration


def test_a_dockerfile_without_a_final_newline_still_gets_its_args_on_their_own_lines():
    out = _host_ca.declare_args("FROM debian:bookworm-slim")
    assert out.splitlines()[:2] == ["FROM debian:bookworm-slim", "ARG SSL_CERT_FILE"]


def test_a_podman_build_reads_a_copy_and_mounts_the_folder(trusted, tmp_path):
    dockerfile = tmp_path / "env" / "Dockerfile"
    dockerfile.parent.mkdir()
    dockerfile.write_text("FROM debian:bookworm-slim\nRUN apt-get install -y ca-certificates\n")
    with _host_ca.BuildTrust("podman", dockerfile) as args:
        copy = Path(args[args.index("-f") + 1])
        assert copy.parent != dockerfile.parent and "ARG SSL_CERT_FILE" in copy.read_text()
        assert args[args.index("--volume") + 1].endswith(":/run/envevo-host-ca:ro")
        build_args = [args[i + 1] for i, a in enumerate(args) if a == "--build-arg"]
        assert "PIP_CERT=/run/envevo-host-ca/ca-bundle.crt" in build_args and len(build_args) == len(_host_ca.variables())
    assert not copy.exists()
    assert dockerfile.read_text() == "FROM debian:bookworm-slim\nRUN apt-get install -y ca-certificates\n"
    with _host_ca.BuildTrust("docker", dockerfile) as args:
        assert args == []  # docker's build mounts nothing into RUN steps


def test_every_compose_service_trusts_it_and_every_build_reads_a_copy(trusted, tmp_path):
    env_dir = FIXTURES / "realistic" / "compose" / "environment"
    overlay = trust_overlay(env_dir, tmp_path, builds=True, prebuilt=False)["services"]
    assert set(overlay) == {"main", "kv"}
    for name, context in (("main", env_dir), ("kv", env_dir / "kv")):
        service = overlay[name]
        assert service["environment"]["SSL_CERT_FILE"] == "/run/envevo-host-ca/ca-bundle.crt"
        assert service["volumes"][0].endswith(":/run/envevo-host-ca:ro")
        copy = Path(service["build"]["dockerfile"])
        assert copy.is_absolute() and copy.parent == tmp_path
        assert copy.read_text() == _host_ca.declare_args((context / "Dockerfile").read_text())
        assert service["build"]["args"] == _host_ca.ca_env()
    assert "build" not in trust_overlay(env_dir, tmp_path, builds=False, prebuilt=False)["services"]["main"]


def test_a_prebuilt_main_service_is_not_given_a_build(trusted, tmp_path):
    overlay = trust_overlay(tmp_path, tmp_path, builds=True, prebuilt=True)["services"]
    assert list(overlay) == ["main"] and "build" not in overlay["main"]


def test_compose_builds_mount_the_folder_through_podman_compose(trusted):
    calls = []

    class Base:
        async def _run_docker_compose_command(self, command, *args, **kwargs):
            calls.append(command)

    class Env(_NoNetworkCompose, Base):
        pass

    env = Env()
    env._envevo_build_volume = _host_ca.volume_args()[1]
    asyncio.run(env._run_docker_compose_command(["build"]))
    asyncio.run(env._run_docker_compose_command(["up", "-d"]))
    assert calls == [[f"--podman-build-args=--volume={env._envevo_build_volume}", "build"], ["up", "-d"]]


@pytest.mark.parametrize("line, said", [
    ("  WARNING: Retrying (Retry(total=4)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: "
     "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain "
     "(_ssl.c:1029)'))': /simple/tabulate/",
     "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain"),
    ("curl: (60) SSL certificate problem: self-signed certificate in certificate chain",
     "SSL certificate problem: self-signed certificate in certificate chain"),
    ("fatal: unable to access 'https://github.com/o/r.git/': server certificate verification failed. CAfile: none",
     "server certificate verification failed. CAfile: none"),
    ("E: Failed to fetch https://x/InRelease  Certificate verification failed: The certificate is NOT trusted.",
     "Certificate verification failed: The certificate is NOT trusted"),
    ("ERROR: cannot verify pypi.org's certificate, issued by 'CN=proxy'", "cannot verify pypi.org's certificate, issued by"),
    ("  error: invalid peer certificate: UnknownIssuer", "invalid peer certificate: UnknownIssuer"),
    ("x509: certificate signed by unknown authority", "x509: certificate signed by unknown authority"),
    ("npm ERR! code SELF_SIGNED_CERT_IN_CHAIN", "SELF_SIGNED_CERT_IN_CHAIN"),
])
def test_the_usual_clients_failing_verification_are_recognised(line, said):
    assert cert_failure("Step 3/4 : RUN fetch", line) == said


def test_other_build_failures_are_not():
    assert cert_failure("E: Unable to locate package nope", "Error: building at STEP \"RUN x\": exit status 1") is None
    assert cert_failure_line("ssl module loaded", "") is None


def test_the_line_names_the_fix_and_what_the_trust_cannot_do(untrusted, monkeypatch, tmp_path):
    line = cert_failure_line("curl: (60) SSL certificate problem: unable to get local issuer certificate")
    assert line == ("the build failed TLS certificate verification (SSL certificate problem: unable to get local issuer "
                    f"certificate): a TLS-intercepting proxy re-signs HTTPS and the image does not trust its CA; fix: {FIX}")
    bundle = tmp_path / "b.crt"
    bundle.write_text("x")
    monkeypatch.setenv(_host_ca.ENV_VAR, str(bundle))
    line = cert_failure_line("curl: (60) SSL certificate problem: unable to get local issuer certificate")
    assert line is not None and f"even trusting the host CA bundle {bundle}" in line and line.endswith(FIX)


def test_a_verdict_reason_says_so_in_its_first_line(untrusted, tmp_path):
    trial = tmp_path / "trial"
    (trial / "environment" / "main").mkdir(parents=True)
    (trial / "environment" / "main" / "build.log").write_text(
        "STEP 2/3: RUN pip install tabulate\nWARNING: Retrying after connection broken by 'SSLError(SSLCertVerification"
        "Error(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate "
        "chain (_ssl.c:1029)'))': /simple/tabulate/\nERROR: No matching distribution found for tabulate\n"
        "Error: building at STEP \"RUN pip install tabulate\": while running runtime: exit status 1\n")
    o = TrialOutcome(task="t", agent="oracle", error_kind=ErrorKind.ENVIRONMENT_BUILD_FAILURE, trial_dir=trial,
                     error_message='SandboxBuildFailedError: building /x failed: Error: building at STEP "RUN pip '
                                   'install tabulate": while running runtime: exit status 1')
    first = explain_error(o).splitlines()[0]
    assert first == ("environment_build_failure: the build failed TLS certificate verification ([SSL: "
                     "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain): "
                     "a TLS-intercepting proxy re-signs HTTPS and the image does not trust its CA; fix: envevo doctor "
                     f"--trust-host-ca (logs: {trial})")
