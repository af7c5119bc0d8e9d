"""Let builds and containers trust the host's CA bundle, for hosts behind a TLS-intercepting proxy.

Opt-in: `envevo doctor --trust-host-ca` records the bundle and `envevo.sandbox.activate()` exports it as
ENVEVO_HOST_CA_BUNDLE. The bundle is bind-mounted read-only over the image's system bundle path, and the
variables that pip, requests, curl and node read point at it, so nothing is baked into any image.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "ENVEVO_HOST_CA_BUNDLE"
CONTAINER_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
_CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


def bundle() -> Path | None:
    value = os.environ.get(ENV_VAR)
    return Path(value) if value and Path(value).is_file() else None


def ca_env() -> dict[str, str]:
    return {name: CONTAINER_BUNDLE for name in _CA_VARIABLES} if bundle() else {}


def volume_args() -> list[str]:
    """`-v` arguments for `podman build` and `podman run`; empty when the host CA is not trusted."""
    b = bundle()
    return ["--volume", f"{b.resolve()}:{CONTAINER_BUNDLE}:ro"] if b else []
