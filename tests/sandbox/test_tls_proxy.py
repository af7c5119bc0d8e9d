"""Builds behind a TLS-intercepting proxy, for real: an HTTPS server on this host whose certificate a CA of the test's
own signs, so no image trusts it, as with the proxy on this machine (docs/sandbox.md).

The server listens on the host's own address (a build's RUN step reaches it there through podman's network; the
host's loopback is the container's own). Each test's Dockerfile names the server's port, so its cache tag is new.
"""

import asyncio
import datetime
import hashlib
import ipaddress
import json
import shutil
import socket
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from envevo.runtime import _host_ca
from envevo.runtime._image_cache import build_cached_image
from envevo.sandbox import ensure_standin
from tests.conftest import run_cli

pytestmark = pytest.mark.sandbox

BASE = "python:3.13-slim-bookworm"  # a stand-in here: Debian, python3 and ca-certificates (the public roots)


def _host_ip() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("198.51.100.1", 9))  # no packet is sent: this only picks the address of the default route
        ip = s.getsockname()[0]
    if ip.startswith("127."):
        pytest.fail("this host has no address but loopback for containers to reach")
    return ip


def _cert(subject: str, key, issuer=None, issuer_key=None, ca=False, ip: str | None = None):
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    # What Python 3.13's strict verification asks of a chain: key identifiers, key usage, the server's address.
    builder = (builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key((issuer_key or key).public_key()),
                              critical=False)
               .add_extension(x509.KeyUsage(digital_signature=not ca, key_cert_sign=ca, crl_sign=ca,
                                            content_commitment=False, key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False, decipher_only=False), critical=True))
    if ip:
        builder = (builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
                                         critical=False)
                   .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    return builder.sign(issuer_key or key, hashes.SHA256())


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """(url, bundle with the fake CA, requests served)."""
    folder = tmp_path_factory.mktemp("tls-proxy")
    ip = _host_ip()
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("envevo test intercepting CA", ca_key, ca=True)
    leaf = _cert(ip, key, issuer=ca.subject, issuer_key=ca_key, ip=ip)
    pem = serialization.Encoding.PEM
    (folder / "ca.crt").write_bytes(ca.public_bytes(pem))
    (folder / "server.crt").write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    (folder / "server.key").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    served: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            served.append(self.path)
            body = b"intercepted hello\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((ip, 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(folder / "server.crt", folder / "server.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://{ip}:{server.server_address[1]}", folder / "ca.crt", served
    server.shutdown()
    server.server_close()
    digest = hashlib.sha256((folder / "ca.crt").read_bytes()).hexdigest()[:16]
    shutil.rmtree(_host_ca._state_dir() / digest, ignore_errors=True)  # the copy envevo mounted for this test's CA


@pytest.fixture(scope="module")
def base(sandbox):
    ensure_standin(sandbox, BASE)
    return BASE


def _task(root: Path, url: str, base: str) -> Path:
    task = root / "fetch-at-build"
    for d in ("environment", "solution", "tests"):
        (task / d).mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(
        f"FROM {base}\n"
        f"RUN python3 -c 'import urllib.request as u; open(\"/fetched.txt\", \"wb\").write(u.urlopen(\"{url}/build\").read())'\n"
        "WORKDIR /app\n")
    (task / "instruction.md").write_text("Copy /fetched.txt to /app/out.txt.\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ncp /fetched.txt /app/out.txt\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if grep -qx 'intercepted hello' /app/out.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 120.0\n\n'
                                    '[environment]\nbuild_timeout_sec = 300.0\nallow_internet = false\n')
    return task


def _verify(task: Path, jobs: Path, bundle: str) -> dict:
    # ENVEVO_HOST_CA_BUNDLE set (empty: off) wins over what doctor recorded for this host.
    import os

    env = {**os.environ, _host_ca.ENV_VAR: bundle}
    proc = run_cli("verify", str(task), "--red-team", "off", "--repeats", "1", "--json", "--jobs-dir", str(jobs), env=env)
    (verdict,) = json.loads(proc.stdout)
    return verdict


def _rmi(*tags: str) -> None:
    subprocess.run(["podman", "rmi", "-f", *tags], capture_output=True, timeout=120)


def test_a_build_behind_the_proxy_fails_in_one_line_naming_the_fix_then_verifies_trusting_its_ca(
        proxy, base, tmp_path):
    url, ca, served = proxy
    task = _task(tmp_path, url, base)
    before = len(served)
    try:
        untrusted = _verify(task, tmp_path / "jobs-off", "")
        assert untrusted["status"] != "ok" and not untrusted["oracle"]["passed"]
        first = untrusted["oracle"]["reasons"][0].splitlines()[0]
        assert ("environment_build_failure: the build failed TLS certificate verification ([SSL: "
                "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain): a "
                "TLS-intercepting proxy re-signs HTTPS and the image does not trust its CA; fix: envevo doctor "
                "--trust-host-ca (logs: ") in first
        assert len(served) == before  # the handshake failed: nothing was served

        trusted = _verify(task, tmp_path / "jobs-on", str(ca))
        assert trusted["status"] == "ok", json.dumps(trusted["oracle"]["reasons"], indent=1)
        assert "/build" in served[before:]
    finally:
        from envevo.runtime import cache_tag

        _rmi(cache_tag(task / "environment"))


def test_apt_installs_ca_certificates_with_the_trust_on_and_the_image_keeps_no_trust_setting(
        proxy, base, sandbox, tmp_path, monkeypatch):
    url, ca, _served = proxy
    monkeypatch.setenv(_host_ca.ENV_VAR, str(ca))
    env = tmp_path / "env"
    env.mkdir()
    # apt over http works here; the postinst of ca-certificates rewrites /etc/ssl/certs, which must stay writable.
    (env / "Dockerfile").write_text(
        f"FROM {base}\n"
        "RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall --no-install-recommends "
        "ca-certificates curl && update-ca-certificates --fresh\n"
        f"RUN curl -sSf {url}/curl && python3 -c 'import urllib.request as u; u.urlopen(\"{url}/python\")'\n")
    ok, tag, output = asyncio.run(build_cached_image(sandbox, env, force=True))
    try:
        assert ok, output[-3000:]
        assert "Errors were encountered" not in output and "intercepted hello" in output
        config = subprocess.run(["podman", "image", "inspect", tag, "--format", "{{json .Config.Env}}"],
                                capture_output=True, text=True, timeout=60)
        assert not set(_host_ca.variables()) & {e.split("=", 1)[0] for e in json.loads(config.stdout)}
        probe = ["curl", "-sSf", f"{url}/run"]
        # A container trusts it exactly when it is run with envevo's mount and variables.
        run = subprocess.run(["podman", "run", "--rm", *_host_ca.volume_args(), *_host_ca.env_args(), tag, *probe],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout == "intercepted hello\n", run.stderr
        bare = subprocess.run(["podman", "run", "--rm", tag, *probe], capture_output=True, text=True, timeout=120)
        assert bare.returncode == 60 and "SSL certificate problem" in bare.stderr
    finally:
        _rmi(tag)


def test_compose_services_build_and_run_trusting_it(proxy, base, tmp_path):
    url, ca, served = proxy
    task = _task(tmp_path, url, base)
    env = task / "environment"
    (env / "side").mkdir()
    (env / "side" / "Dockerfile").write_text(
        f"FROM {base}\nRUN python3 -c 'import urllib.request as u; u.urlopen(\"{url}/side-build\")'\n"
        "CMD [\"sleep\", \"infinity\"]\n")
    (env / "docker-compose.yaml").write_text("services:\n  main:\n    depends_on: [side]\n  side:\n    build:\n"
                                             "      context: ./side\n")
    # The tests read a file a service fetched at start: the running services trust the CA too.
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "python3 -c 'import os, urllib.request as u; assert os.environ[\"SSL_CERT_FILE\"]; "
        f"u.urlopen(\"{url}/main-run\")' && grep -qx 'intercepted hello' /app/out.txt "
        "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))  # to reach the server
    before = len(served)
    verdict = _verify(task, tmp_path / "jobs", str(ca))
    assert verdict["status"] == "ok", json.dumps(verdict["oracle"]["reasons"], indent=1)
    assert {"/build", "/side-build", "/main-run"} <= set(served[before:])
