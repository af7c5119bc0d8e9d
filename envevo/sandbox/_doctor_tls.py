"""Doctor's check of HTTPS from containers behind a TLS-intercepting proxy, and of trusting the host's CA bundle.

Separate from _doctor, whose other checks share its engine and apt helpers: this one stands on _tls and the
stand-ins alone. ``Doctor`` takes it in as a mixin; the mixin declares the attributes it reads.
"""

from __future__ import annotations

from collections.abc import Callable

from envevo.errors import UserError
from envevo.sandbox import _tls
from envevo.sandbox._doctor_check import Check, Status
from envevo.sandbox._standins import ensure_standin
from envevo.sandbox._standins_engine import image_id
from envevo.sandbox._standins_model import STANDIN_REPO, load_registry


class TlsCheck:
    """The ``tls`` check of ``Doctor``, which sets these attributes."""

    engine: str
    fix: bool
    trust_host_ca: bool | None
    progress: Callable[[str], None]

    def _python_probe_image(self) -> str | None:
        """A local image with python3 to probe HTTPS from: a python stand-in, built if asked to trust the CA."""
        for tag, entry in load_registry().items():
            if entry.kind == "python" and image_id(self.engine, tag) == entry.image_id:
                return tag
        for suite in ("trixie", "bookworm"):
            if image_id(self.engine, f"{STANDIN_REPO}:python-{suite}-slim"):
                return f"{STANDIN_REPO}:python-{suite}-slim"
        if self.trust_host_ca:
            try:
                return ensure_standin(self.engine, "python:3.13-slim", self.progress).tag
            except UserError:
                return None
        return None

    def tls(self) -> Check:
        """A TLS-intercepting proxy (docs/sandbox.md): found from the host alone, confirmed from a container where an
        image with python3 exists. `--fix` (or `--trust-host-ca`) makes builds and containers trust the host's CA
        bundle when it verifies the proxy; `--no-trust-host-ca` turns that off, and `--fix` then leaves it off."""
        from envevo.runtime import host_ca as _host_ca

        name = "https from containers"
        off = "envevo doctor --no-trust-host-ca"
        if self.trust_host_ca is False:
            _tls.record_no_trust()
        host_ok, host_why = _tls.host_reaches()
        if not host_ok:
            return Check(name=name, status=Status.WARN, detail=f"the host itself cannot reach {_tls.PROBE_URL} ({host_why}); not checked")
        proxy = _tls.intercepted()
        bundle = _host_ca.bundle()
        image = self._python_probe_image()
        said = (f"a TLS-intercepting proxy re-signs HTTPS here: the host's CA bundle verifies {_tls.PROBE_URL}, "
                "the public roots images ship do not")
        if proxy and bundle is None and (self.trust_host_ca or (self.fix and not _tls.turned_off())):
            host = _tls.host_bundle()
            if host is not None:
                _tls.record_trust(host)
                bundle = _host_ca.bundle()
                if image is not None:
                    ok, why = _tls.container_reaches(self.engine, image, trust_host_ca=True)
                    if not ok:
                        return Check(name=name, status=Status.WARN,
                                     detail=f"{said}; trusting {host}, a container still fails ({why})",
                                     fix=f"check that {host} holds the proxy's CA; off: {off}")
                return Check(name=name, status=Status.FIXED,
                             detail=f"{said}: builds and containers now trust the host CA bundle {host} (recorded in "
                                    f"{_tls.trust_file()}; off: {off})")
        if image is None:
            if proxy and bundle is not None:
                return Check(name=name, status=Status.OK, detail=f"{said}; builds and containers trust the host CA "
                             f"bundle {bundle} (off: {off})")
            if proxy:
                return Check(name=name, status=Status.WARN, detail=said + ("; trust turned off" if _tls.turned_off() else "")
                             + "; pip, curl and git over HTTPS fail in builds and containers",
                             fix="envevo doctor --trust-host-ca  # builds and containers trust the host's CA bundle")
            return Check(name=name, status=Status.OK,
                         detail="no TLS-intercepting proxy seen from the host" if proxy is False else
                         "not checked: no local image with python3 (envevo doctor --trust-host-ca builds python:3.13-slim to probe)")
        trusted = bundle is not None
        self.progress(f"probing {_tls.PROBE_URL} from a container…")
        ok, why = _tls.container_reaches(self.engine, image, trust_host_ca=trusted)
        if ok:
            return Check(name=name, status=Status.OK, detail=f"containers reach {_tls.PROBE_URL}"
                         + (f" (trusting the host CA bundle {bundle}; off: {off})" if trusted else ""))
        if not _tls.is_verify_error(why):
            return Check(name=name, status=Status.WARN, detail=f"the host reaches {_tls.PROBE_URL}, containers do not: {why}",
                         fix=f"{self.engine} run --rm {image} python3 -c "
                             f"'import urllib.request as u; u.urlopen(\"{_tls.PROBE_URL}\")'  # and read the error")
        detail = ("a TLS-intercepting proxy: the host verifies " + _tls.PROBE_URL + " with its CA bundle, containers fail ("
                  + why + ")")
        host = _tls.host_bundle()
        if not trusted and host is not None and (self.trust_host_ca or (self.fix and not _tls.turned_off())):
            _tls.record_trust(host)  # the host alone could not tell (no certifi); the container did
            ok, why = _tls.container_reaches(self.engine, image, trust_host_ca=True)
            if ok:
                return Check(name=name, status=Status.FIXED,
                             detail=f"{detail}: builds and containers now trust the host CA bundle {host} (recorded in "
                                    f"{_tls.trust_file()}; off: {off})")
            trusted, bundle = True, host
        if trusted:
            return Check(name=name, status=Status.WARN, detail=detail + f", even trusting {bundle}",
                         fix=f"check that {bundle} holds the proxy's CA")
        return Check(name=name, status=Status.WARN, detail=detail + ("; trust turned off" if _tls.turned_off() else "")
                     + "; pip, curl and git over HTTPS fail in builds and containers",
                     fix="envevo doctor --trust-host-ca  # builds and containers trust the host's CA bundle")
