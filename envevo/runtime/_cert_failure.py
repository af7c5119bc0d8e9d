"""A build that failed on TLS certificate verification, found in its log and said in one line with its fix.

Behind a TLS-intercepting proxy (docs/sandbox.md) every HTTPS fetch of a build (pip, curl, git, apt over https, wget,
npm, uv, go) fails verification unless the build trusts the host's CA bundle (envevo/runtime/_host_ca.py).
"""

from __future__ import annotations

import re

FIX = "envevo doctor --trust-host-ca"

# What the usual clients print when verification fails; each names the failure, not merely TLS.
_MARKERS = re.compile(
    "|".join((
        r"CERTIFICATE_VERIFY_FAILED",  # Python's ssl: pip, requests, urllib
        r"certificate verify failed",
        r"SSL certificate problem",  # curl, git over curl
        r"server certificate verification failed",  # git with GnuTLS
        r"Certificate verification failed",  # apt over https
        r"cannot verify \S+ certificate",  # wget
        r"x509: certificate signed by unknown authority",  # go
        r"UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN|unable to verify the first certificate",  # node, npm
        r"invalid peer certificate: UnknownIssuer",  # rustls: uv, cargo
    )),
    re.I,
)


def cert_failure(*texts: str) -> str | None:
    """The words of ``texts`` that say certificate verification failed (the first such line's, trimmed to the
    failure and its reason); None if nothing does."""
    for text in texts:
        for line in (text or "").splitlines():
            m = _MARKERS.search(line)
            if m:
                return _excerpt(line, m.start(), m.end())
    return None


def _excerpt(line: str, at: int, end: int, width: int = 140) -> str:
    start = line.rfind("[SSL: ", 0, at + 1) if "[SSL: " in line[max(0, at - 6):at + 1] else at
    words = line[start:]
    for stop in (" (_ssl.c", "')", "'", '"', " More details"):
        cut = words.find(stop, end - start)
        if cut > 0:
            words = words[:cut]
    words = " ".join(words.split()).rstrip(" :;,.")
    return words if len(words) <= width else words[:width].rstrip() + "…"


def cert_failure_line(*texts: str) -> str | None:
    """One line for a verdict when a build failed on certificate verification: what failed and the fix."""
    evidence = cert_failure(*texts)
    if evidence is None:
        return None
    from envevo.runtime._host_ca import bundle

    trusted = bundle()
    if trusted is not None:
        return (f"the build failed TLS certificate verification ({evidence}) even trusting the host CA bundle "
                f"{trusted}: it lacks the CA that signed the server's certificate; fix: add that CA to the host's "
                f"CA store (update-ca-certificates), then {FIX}")
    return (f"the build failed TLS certificate verification ({evidence}): a TLS-intercepting proxy re-signs HTTPS "
            f"and the image does not trust its CA; fix: {FIX}")
