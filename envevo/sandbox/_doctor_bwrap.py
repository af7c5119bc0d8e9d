"""The doctor's check of the lighter local sandbox (`--env bwrap`): what it needs and whether this host has it.

Optional beside podman: with `--env podman` (the default) a missing or unusable bwrap is a warning, with
`--env bwrap` a failure. `--fix` installs Debian's `bubblewrap`. The probe starts one real sandbox from the Debian
base image (the image mounted read-only, an overlay, the identity-mapped user namespace, a command, a copy out), so
"ok" means trials can run here, not only that the binary exists.
"""

from __future__ import annotations

import shutil
import subprocess

from envevo.runtime import BWRAP, bwrap_probe
from envevo.sandbox._doctor_check import Check, Status


class BwrapCheck:
    """Mixed into Doctor: `bwrap_check` after the base images (the probe starts from the Debian base)."""

    engine: str
    fix: bool
    backend_required: bool  # --env bwrap: a failure, not a warning

    def bwrap_check(self, probe_image: str) -> Check:
        from envevo.sandbox._doctor import _apt_cmd, _apt_install, _run

        name = f"{BWRAP.name} (--env {BWRAP.name})"
        bad = Status.FAIL if self.backend_required else Status.WARN
        fixed = False
        if shutil.which(BWRAP.name) is None:
            if not (self.fix and _apt_install(list(BWRAP.system_packages)) and shutil.which(BWRAP.name)):
                return Check(name=name, status=bad, detail=f"not installed; it needs {BWRAP.needs}",
                             fix=_apt_cmd(list(BWRAP.system_packages)))
            fixed = True
        mount = _run([self.engine, "image", "mount", probe_image], timeout=120)
        lines = mount.stdout.strip().splitlines()
        why = (bwrap_probe(lines[-1]) if mount.returncode == 0 and lines
               else f"{self.engine} image mount {probe_image}: {mount.stderr.strip()[-200:]}")
        if mount.returncode == 0:
            _run([self.engine, "image", "unmount", probe_image], timeout=60)  # the probe's mount only
        if why is not None:
            return Check(name=name, status=bad, detail=f"installed, but no sandbox starts here: {why}; it needs "
                         f"{BWRAP.needs}", fix=f"use --env {BWRAP.images.name}")
        version = subprocess.run([BWRAP.name, "--version"], capture_output=True, text=True).stdout.strip()
        return Check(name=name, status=Status.FIXED if fixed else Status.OK,
                     detail=f"{'installed ' if fixed else ''}{version or BWRAP.name}: runs {BWRAP.serves}")
