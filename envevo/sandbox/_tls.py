"""Detect a TLS-intercepting proxy (the host trusts https://pypi.org, containers do not) and, on request,
record the host's CA bundle so builds and containers trust it (see envevo/runtime/_host_ca.py)."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import urllib.request
from pathlib import Path

from envevo.sandbox import _paths

PROBE_URL = "https://pypi.org/simple/"
HOST_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Alpine
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",  # openSUSE
    "/etc/ssl/cert.pem",  # macOS, BSD
)


def host_bundle() -> Path | None:
    """The host's system CA bundle: the first standard path that exists, else OpenSSL's default file."""
    for p in HOST_BUNDLES:
        if Path(p).is_file():
            return Path(p)
    default = ssl.get_default_verify_paths().cafile
    return Path(default) if default and Path(default).is_file() else None


def host_reaches(url: str = PROBE_URL, timeout: float = 10) -> tuple[bool, str]:
    """Whether the host fetches ``url`` verifying TLS with its system CA bundle."""
    bundle = host_bundle()
    ctx = ssl.create_default_context(cafile=str(bundle) if bundle else None)
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
            return True, f"HTTP {resp.status}"
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported as text
        return False, str(getattr(exc, "reason", exc))[:200]


_PROBE = (
    "import sys, urllib.request\n"
    "try:\n"
    "    urllib.request.urlopen(sys.argv[1], timeout=10); print('OK')\n"
    "except Exception as e:\n"
    "    print('FAIL', getattr(e, 'reason', e)); sys.exit(1)\n"
)


def container_reaches(engine: str, image: str, url: str = PROBE_URL, trust_host_ca: bool = False,
                      timeout: float = 60) -> tuple[bool, str]:
    """Whether a container of ``image`` (which has python3) fetches ``url``; with ``trust_host_ca`` it runs
    with the same mount and variables envevo's runtime adds."""
    from envevo.runtime import host_ca as _host_ca

    extra: list[str] = []
    if trust_host_ca:
        extra = [*_host_ca.volume_args(), *[a for k, v in _host_ca.ca_env().items() for a in ("-e", f"{k}={v}")]]
    args = [engine, "run", "--rm", *extra, image, "python3", "-c", _PROBE, url]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)[:200]
    text = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    return proc.returncode == 0, (text[-1] if text else f"exit status {proc.returncode}")[:240]


def trust_file() -> Path:
    return _paths.home() / "host-ca.json"


def record_trust(bundle: Path) -> None:
    """Make every later envevo process export ENVEVO_HOST_CA_BUNDLE (read by ``activate()``)."""
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bundle": str(bundle)}) + "\n")
    from envevo.runtime import HOST_CA_ENV_VAR as ENV_VAR

    os.environ[ENV_VAR] = str(bundle)


def recorded_bundle() -> Path | None:
    try:
        value = json.loads(trust_file().read_text()).get("bundle")
    except (OSError, ValueError, AttributeError):
        return None
    return Path(value) if value and Path(value).is_file() else None
