"""Detect a TLS-intercepting proxy and record whether builds and containers trust the host's CA bundle
(envevo/runtime/_host_ca.py applies it).

The host alone tells: its own CA bundle verifies https://pypi.org, and the public roots that images ship
(Mozilla's, the same set as `certifi`) do not. A container probe, where an image with python3 exists, confirms it.
"""

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


def host_reaches(url: str = PROBE_URL, timeout: float = 10, cafile: str | None = None) -> tuple[bool, str]:
    """Whether the host fetches ``url`` verifying TLS with ``cafile``, by default its system CA bundle."""
    bundle = cafile or host_bundle()
    ctx = ssl.create_default_context(cafile=str(bundle) if bundle else None)
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
            return True, f"HTTP {resp.status}"
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported as text
        return False, str(getattr(exc, "reason", exc))[:200]


def public_roots() -> str | None:
    """A bundle of the public roots images ship (Mozilla's, as packaged by certifi), if certifi is installed."""
    try:
        import certifi
    except ImportError:
        return None
    path: str = certifi.where()
    return path if Path(path).is_file() else None


def is_verify_error(text: str) -> bool:
    return "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text


def intercepted(url: str = PROBE_URL, timeout: float = 10) -> bool | None:
    """Whether something between this host and ``url`` re-signs TLS with a CA only the host trusts: the host's
    bundle verifies ``url``, the public roots do not. None when the host cannot tell (no certifi, or ``url`` is
    unreachable either way)."""
    roots = public_roots()
    if roots is None or not host_reaches(url, timeout)[0]:
        return None
    ok, why = host_reaches(url, timeout, cafile=roots)
    if ok:
        return False
    return True if is_verify_error(why) else None


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

    extra = [*_host_ca.volume_args(), *_host_ca.env_args()] if trust_host_ca else []
    args = [engine, "run", "--rm", *extra, image, "python3", "-c", _PROBE, url]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)[:200]
    text = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    last = text[-1].removeprefix("FAIL ") if text else f"exit status {proc.returncode}"
    return proc.returncode == 0, last[:240]


def trust_file() -> Path:
    return _paths.home() / "host-ca.json"


def record_trust(bundle: Path) -> None:
    """Make every later envevo process export ENVEVO_HOST_CA_BUNDLE (read by ``activate()``)."""
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"trust": True, "bundle": str(bundle)}) + "\n")
    from envevo.runtime import HOST_CA_ENV_VAR as ENV_VAR

    os.environ[ENV_VAR] = str(bundle)


def record_no_trust() -> None:
    """Turn the trust off, for this process and every later one; `doctor --fix` then leaves it off."""
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"trust": False}) + "\n")
    from envevo.runtime import HOST_CA_ENV_VAR as ENV_VAR

    os.environ.pop(ENV_VAR, None)


def _recorded() -> dict:
    try:
        value = json.loads(trust_file().read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def turned_off() -> bool:
    """The user turned the trust off (`envevo doctor --no-trust-host-ca`)."""
    return _recorded().get("trust") is False


def recorded_bundle() -> Path | None:
    rec = _recorded()
    value = rec.get("bundle") if rec.get("trust", True) else None
    return Path(value) if isinstance(value, str) and value and Path(value).is_file() else None
