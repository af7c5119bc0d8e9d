"""Doctor's TLS check: a TLS-intercepting proxy is found from the host alone; `--fix` trusts the host's CA bundle
(stated, with the way off), `--no-trust-host-ca` turns it off and `--fix` leaves it off. The network and the engine
are stubbed here; tests/sandbox/test_tls_proxy.py runs builds behind a fake proxy."""

import json
import os

import pytest

from envevo.runtime import HOST_CA_ENV_VAR
from envevo.sandbox import Doctor, Status, _tls


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host behind a proxy: its bundle verifies PyPI, the public roots do not; a python image to probe from."""
    bundle = tmp_path / "ca-certificates.crt"
    bundle.write_text("host bundle with the proxy's CA\n")
    monkeypatch.setenv("ENVEVO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(HOST_CA_ENV_VAR, raising=False)
    state = {"proxy": True, "image": "localhost/envevo-standin:python-trixie-slim", "probes": []}

    def container_reaches(engine, image, url=_tls.PROBE_URL, trust_host_ca=False, timeout=60):
        state["probes"].append(trust_host_ca)
        if trust_host_ca or not state.get("proxy_in_container", state["proxy"]):
            return True, "OK"
        return False, "<urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed " \
                      "certificate in certificate chain (_ssl.c:1000)>"

    monkeypatch.setattr(_tls, "host_bundle", lambda: bundle)
    monkeypatch.setattr(_tls, "host_reaches", lambda *a, **k: (True, "HTTP 200"))
    monkeypatch.setattr(_tls, "intercepted", lambda *a, **k: state["proxy"])
    monkeypatch.setattr(_tls, "container_reaches", container_reaches)
    monkeypatch.setattr(Doctor, "_python_probe_image", lambda self: state["image"])
    state["bundle"] = bundle
    return state


def _tls_check(**kw):
    return Doctor(**kw).tls()


def test_fix_trusts_the_host_bundle_when_it_verifies_the_proxy_and_says_how_to_turn_it_off(host):
    check = _tls_check(fix=True)
    assert check.status is Status.FIXED
    assert f"builds and containers now trust the host CA bundle {host['bundle']}" in check.detail
    assert "off: envevo doctor --no-trust-host-ca" in check.detail
    assert json.loads(_tls.trust_file().read_text()) == {"trust": True, "bundle": str(host["bundle"])}
    assert os.environ[HOST_CA_ENV_VAR] == str(host["bundle"]) and host["probes"] == [True]
    again = _tls_check(fix=True)  # idempotent: the next run finds it on and working
    assert again.status is Status.OK and "trusting the host CA bundle" in again.detail


def test_without_fix_it_warns_and_names_the_command(host):
    check = _tls_check()
    assert check.status is Status.WARN and "TLS-intercepting proxy" in check.detail
    assert "pip, curl and git over HTTPS fail in builds and containers" in check.detail
    assert check.fix is not None and check.fix.startswith("envevo doctor --trust-host-ca")
    assert not _tls.trust_file().exists() and HOST_CA_ENV_VAR not in os.environ


def test_turned_off_it_stays_off_under_fix_until_turned_on(host):
    _tls_check(fix=True)
    off = _tls_check(trust_host_ca=False)
    assert off.status is Status.WARN and "trust turned off" in off.detail
    assert json.loads(_tls.trust_file().read_text()) == {"trust": False} and HOST_CA_ENV_VAR not in os.environ
    assert _tls.recorded_bundle() is None and _tls.turned_off()
    assert _tls_check(fix=True).status is Status.WARN  # --fix respects the user's choice
    assert _tls_check(trust_host_ca=True).status is Status.FIXED
    assert _tls.recorded_bundle() == host["bundle"]


def test_no_proxy_no_trust(host):
    host["proxy"] = False
    check = _tls_check(fix=True)
    assert check.status is Status.OK and check.detail == f"containers reach {_tls.PROBE_URL}"
    assert not _tls.trust_file().exists()


def test_without_a_python_image_the_host_alone_decides(host):
    host["image"] = None
    assert _tls_check().status is Status.WARN
    fixed = _tls_check(fix=True)
    assert fixed.status is Status.FIXED and host["probes"] == []
    assert _tls_check().status is Status.OK
    host["proxy"] = False
    host["image"] = None
    _tls.trust_file().unlink()
    os.environ.pop(HOST_CA_ENV_VAR)
    assert _tls_check().detail == "no TLS-intercepting proxy seen from the host"


def test_the_host_sees_the_interception_against_the_public_roots(monkeypatch):
    calls = []

    def reaches(url=_tls.PROBE_URL, timeout=10, cafile=None):
        calls.append(cafile)
        return (True, "HTTP 200") if cafile is None else (False, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")

    monkeypatch.setattr(_tls, "host_reaches", reaches)
    monkeypatch.setattr(_tls, "public_roots", lambda: "/roots.pem")
    assert _tls.intercepted() is True and calls == [None, "/roots.pem"]
    monkeypatch.setattr(_tls, "host_reaches", lambda url=_tls.PROBE_URL, timeout=10, cafile=None: (True, "HTTP 200"))
    assert _tls.intercepted() is False
    monkeypatch.setattr(_tls, "public_roots", lambda: None)
    assert _tls.intercepted() is None


def test_where_the_host_cannot_tell_the_container_probe_decides(host):
    host["proxy"], host["proxy_in_container"] = None, True  # e.g. no certifi on the host
    check = _tls_check(fix=True)
    assert check.status is Status.FIXED and "now trust the host CA bundle" in check.detail
    assert host["probes"] == [False, True] and _tls.recorded_bundle() == host["bundle"]
