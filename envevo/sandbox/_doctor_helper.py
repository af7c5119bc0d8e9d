"""Doctor's check of the network-cut helper image of verifiers' container runtime (prime-rl rollouts of an export).

verifiers (`verifiers.v1.runtimes.docker`, 0.4) cuts a no-network box's egress with iptables run from its own helper
image, `localhost/verifiers-network:1`, which it builds on first use `FROM docker.io/library/alpine:3.22` with
Alpine's package mirror. A host without an image registry has neither, and every no-network rollout fails there.
`--fix` builds it as verifiers would when the registry answers; otherwise a stated stand-in from what the host has:
the Debian base every stand-in starts from, with iptables and iproute2 (what verifiers' cut script runs: sh, ip,
awk, iptables with its conntrack and addrtype matches), labelled `envevo.standin` like the other stand-ins (so
`doctor --prune` keeps it). verifiers then finds it under its own name and builds nothing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from envevo.errors import UserError
from envevo.sandbox._doctor_check import Check, Status
from envevo.sandbox._standins_engine import _build, image_id, image_info
from envevo.sandbox._standins_model import LABEL

NAME = "verifiers network helper"
HELPER = "localhost/verifiers-network:1"  # verifiers' _NETWORK_IMAGE
UPSTREAM = "docker.io/library/alpine:3.22"
UPSTREAM_RECIPE = f"FROM {UPSTREAM}\nRUN apk add --no-cache iptables\n"
STANDIN_BASE = "docker.io/library/debian:bookworm-slim"  # the doctor's own probe image, provided before this check
STANDIN_RECIPE = (f"FROM {STANDIN_BASE}\nRUN apt-get update && apt-get install -y --no-install-recommends iptables "
                  "iproute2 && rm -rf /var/lib/apt/lists/*\n")
STANDIN = "Debian bookworm + iptables, iproute2 (upstream: alpine:3.22 + iptables)"
PULL_TIMEOUT = 60  # s: a registry may answer on other hosts; here it may not, so the try is bounded


def _pulled(engine: str, image: str) -> bool:
    try:
        return subprocess.run([engine, "pull", "-q", image], capture_output=True, timeout=PULL_TIMEOUT).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def provide_network_helper(engine: str, progress: Callable[[str], None] = lambda _m: None) -> str:
    """Build verifiers' helper under its name: verifiers' own recipe when its base can be pulled (and Alpine's mirror
    answers), else the stand-in. What was built, in words; UserError when neither can be."""
    progress(f"pulling {UPSTREAM} (at most {PULL_TIMEOUT} s)…")
    if _pulled(engine, UPSTREAM):
        try:
            _build(engine, UPSTREAM_RECIPE, HELPER, {}, f"verifiers' network helper {HELPER}")
            return f"built {HELPER} as verifiers does ({UPSTREAM} + iptables)"
        except UserError:
            pass  # the registry answered, Alpine's mirror did not: the stand-in needs neither
    if image_id(engine, STANDIN_BASE) is None:
        raise UserError(f"cannot pull {UPSTREAM}, and the Debian base {STANDIN_BASE} to stand in from is missing")
    progress(f"building a stand-in for {HELPER}: {STANDIN}…")
    _build(engine, STANDIN_RECIPE, HELPER, {LABEL: STANDIN}, f"a stand-in for {HELPER}")
    return f"stand-in {HELPER} → {STANDIN}, built here because {UPSTREAM} cannot be pulled"


class NetworkHelperCheck:
    """The ``network_helper`` check of ``Doctor``, which sets these attributes."""

    engine: str
    fix: bool
    progress: Callable[[str], None]

    def network_helper(self) -> Check:
        """Present (a stand-in said so), built with --fix, or a warning: envevo's own sandboxes do not use it."""
        info = image_info(self.engine, HELPER)
        if info is not None:
            standin = info[1].get(LABEL)
            return Check(name=NAME, status=Status.OK, detail=f"{HELPER}" + (f" (stand-in: {standin})" if standin else ""))
        needs = (f"{HELPER} is missing; verifiers' container runtime (prime-rl rollouts of an export) builds it on "
                 f"first use from {UPSTREAM} and Alpine's package mirror, so on a host without an image registry its "
                 "no-network rollouts fail")
        if not self.fix:
            return Check(name=NAME, status=Status.WARN, detail=needs,
                         fix=f"envevo doctor --fix  # builds it, or a stand-in ({STANDIN}) where no registry answers")
        try:
            return Check(name=NAME, status=Status.FIXED, detail=provide_network_helper(self.engine, self.progress))
        except UserError as exc:
            return Check(name=NAME, status=Status.WARN, detail=f"{needs}; and --fix could not build it: {exc}",
                         fix=f"{self.engine} load -i verifiers-network.tar  # the image, built where a registry answers")
