"""Build a standard Debian base image locally when no image registry is reachable.

debootstrap writes a minimal root filesystem from Debian's package archive, and `podman import` turns
it into an image tagged under the name task Dockerfiles use (e.g. debian:bookworm-slim), so the tasks
themselves stay standard.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from envevo.errors import UserError

DEBIAN_MIRROR = "http://deb.debian.org/debian"


def canonical(image: str) -> str:
    """The fully qualified name podman stores a short Docker Hub name under."""
    if "/" not in image.split(":")[0]:
        return f"docker.io/library/{image}"
    if image.count("/") == 1 and "." not in image.split("/")[0]:
        return f"docker.io/{image}"
    return image


def _standard(image: str) -> str:
    from envevo.sandbox._refs import parse_ref

    try:
        return parse_ref(image).standard
    except ValueError:
        return canonical(image)


def debian_suite(image: str) -> str | None:
    """The Debian suite an image name stands for (digest-pinned and mirror-prefixed spellings included),
    or None if it is not a Debian image we can build."""
    from envevo.sandbox._standins import plan_standin

    plan = plan_standin(image)
    return plan.suite if plan is not None and plan.kind == "debian" else None


def build_debian_image(engine: str, image: str, mirror: str = DEBIAN_MIRROR) -> None:
    suite = debian_suite(image)
    if suite is None:
        raise UserError(
            f"cannot build {image} with debootstrap (it is not a Debian image); "
            f"make it available to {engine} or map it with --image-map {image}=<a local image>"
        )
    if shutil.which("debootstrap") is None:
        raise UserError("debootstrap is not installed: run 'apt-get install -y debootstrap'")
    with tempfile.TemporaryDirectory(prefix="envevo-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        proc = subprocess.run(
            ["debootstrap", "--variant=minbase", suite, str(root), mirror],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"debootstrap {suite} failed ({tail[0]}); check that {mirror} is reachable")
        # Match the official slim images: no package lists or caches shipped in the image.
        for junk in ("var/lib/apt/lists", "var/cache/apt"):
            shutil.rmtree(root / junk, ignore_errors=True)
            (root / junk).mkdir(parents=True, exist_ok=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            [engine, "import", "--change", 'CMD ["bash"]',  # tagged under the digest-free standard name:
             "--change", f"LABEL envevo.standin=\"Debian {suite}, built locally with debootstrap (minbase)\"",
             "-", _standard(image)],
            stdin=tar.stdout,
            capture_output=True,
            text=True,
        )
        tar.wait()
        if imp.returncode != 0 or tar.returncode != 0:
            raise UserError(f"{engine} import of {image} failed: {imp.stderr.strip()[:300]}")
