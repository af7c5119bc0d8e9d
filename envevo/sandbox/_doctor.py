"""`envevo doctor`: check, and with fix=True repair, everything a local sandbox needs.

Each check is idempotent and cheap when its subject is already in place, so a healthy machine is
checked in seconds. A failing check carries one line saying what is wrong and the command that fixes it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from envevo.errors import UserError
from envevo.runtime import BACKENDS, DEFAULT_ENGINE, LOCAL_ENGINES, dialect_of
from envevo.sandbox import _paths
from envevo.sandbox._base_image import canonical
from envevo.sandbox._doctor_bwrap import BwrapCheck
from envevo.sandbox._doctor_check import Check, Status
from envevo.sandbox._doctor_helper import NetworkHelperCheck
from envevo.sandbox._doctor_tls import TlsCheck
from envevo.sandbox._refs import parse_ref
from envevo.sandbox._standins import ensure_standin, plan_standin, why_no_standin
from envevo.sandbox._standins_engine import image_id

DEFAULT_IMAGES = ("debian:bookworm-slim",)
PROBE_IMAGE = "docker.io/library/debian:bookworm-slim"
PROBE_TIMEOUT = 120  # s for the container-start probe; a busy engine (a long commit holds its storage) can take minutes
MIN_COMPOSE = (1, 1)
# Settings this host class needs (docs/sandbox.md): crun fails on hybrid cgroups, and setting container
# rlimits is not permitted. They are harmless where not needed, but written only when a probe fails.
CONTAINERS_CONF = """\
# Written by `envevo doctor --fix` because containers failed to start with the host defaults.
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""


def _run(args: list[str], timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(args, 127, "", str(exc))


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _apt_install(packages: list[str]) -> bool:
    if not (_is_root() and shutil.which("apt-get")):
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if _run(["apt-get", "install", "-y", "-q", *packages], timeout=900, env=env).returncode == 0:
        return True
    _run(["apt-get", "update", "-q"], timeout=600, env=env)
    return _run(["apt-get", "install", "-y", "-q", *packages], timeout=900, env=env).returncode == 0


def _apt_cmd(packages: list[str]) -> str:
    return ("" if _is_root() else "sudo ") + "apt-get install -y " + " ".join(packages)


class Doctor(TlsCheck, NetworkHelperCheck, BwrapCheck):
    """Runs the checks in dependency order; later checks are skipped when an earlier one fails."""

    def __init__(self, env: str = DEFAULT_ENGINE, fix: bool = False, images: Iterable[str] = DEFAULT_IMAGES,
                 trust_host_ca: bool | None = None, progress: Callable[[str], None] | None = None,
                 users: dict[str, list[str]] | None = None):
        # A lighter backend (bwrap) runs images its engine builds: that engine is checked, then the backend.
        self.backend_required = env in BACKENDS
        env = BACKENDS[env].images.name if env in BACKENDS else env
        if env not in LOCAL_ENGINES:
            raise UserError(f"doctor checks local sandboxes only ({' or '.join([*LOCAL_ENGINES, *BACKENDS])}), not {env!r}")
        self.engine = env
        self.dialect = dialect_of(env)
        self.fix = fix
        self.trust_host_ca = trust_host_ca
        self.images = list(dict.fromkeys(images)) or list(DEFAULT_IMAGES)
        self.users = users or {}  # image -> the tasks that use it, named in its failure
        self.checks: list[Check] = []
        self.progress = progress or (lambda _msg: None)

    def run(self) -> list[Check]:
        """The checks in order. A failure up to the Debian base stops the run (nothing later can work); after it,
        every check runs, so one run names every image it cannot provide, the TLS proxy, and the image verifiers'
        runtime needs to cut a box's network (a warning: envevo's own sandboxes do not use it)."""
        _paths.activate()
        steps: list[Callable[[], Check]] = [self.python, self.engine_installed]
        if self.dialect.daemonless:
            steps += [self.runc, self.compose]
        else:
            steps += [self.docker_daemon]
        # Containers must start before any image is built: building a stand-in starts one, and on a fresh
        # host only container_start writes the containers.conf that lets them start (docs/sandbox.md).
        steps += [self.container_start, self.probe_image]
        for step in steps:
            check = step()
            self.checks.append(check)
            if not check.ok:
                return self.checks
        if self.dialect.daemonless:  # the lighter backend runs podman's images, from the Debian base up
            self.checks.append(self.bwrap_check(PROBE_IMAGE))
        self.checks.extend(self.base_image_checks())
        self.checks.extend([self.orphans(), self.tls(), self.network_helper()])
        return self.checks

    # -- individual checks -------------------------------------------------------------------

    def python(self) -> Check:
        v = sys.version_info
        if v >= (3, 12):
            return Check(name="python", status=Status.OK, detail=f"{v.major}.{v.minor}.{v.micro}")
        return Check(
            name="python", status=Status.FAIL, detail=f"Python {v.major}.{v.minor} is too old (need >= 3.12)",
            fix="make venv  # creates .venv with a Python >= 3.12 found by scripts/find-python",
        )

    def _package_check(self, name: str, binary: str, packages: list[str]) -> Check:
        if shutil.which(binary):
            return Check(name=name, status=Status.OK, detail=shutil.which(binary) or binary)
        if self.fix and _apt_install(packages) and shutil.which(binary):
            return Check(name=name, status=Status.FIXED, detail=f"installed {' '.join(packages)}")
        return Check(name=name, status=Status.FAIL, detail=f"{binary} is not installed", fix=_apt_cmd(packages))

    def engine_installed(self) -> Check:
        name = self.dialect.name
        if name not in self.dialect.system_packages:  # not one apt can install here
            if shutil.which(name):
                return Check(name=name, status=Status.OK, detail=shutil.which(name) or name)
            return Check(name=name, status=Status.FAIL, detail=f"{name} is not installed", fix=self.dialect.install_hint)
        check = self._package_check(name, name, list(self.dialect.system_packages))
        if check.ok:
            version = _run([name, "--version"]).stdout.strip()
            check.detail = version or check.detail
        return check

    def docker_daemon(self) -> Check:
        proc = _run([self.engine, "info", "--format", "{{.ServerVersion}}"], timeout=20)
        if proc.returncode == 0 and proc.stdout.strip():
            return Check(name="docker daemon", status=Status.OK, detail=f"server {proc.stdout.strip()}")
        return Check(name="docker daemon", status=Status.FAIL, detail="the Docker daemon is not reachable",
                     fix="start it ('sudo systemctl start docker') or use --env podman")

    def runc(self) -> Check:
        return self._package_check("runc", "runc", ["runc"])

    def compose(self) -> Check:
        def version() -> tuple[int, ...] | None:
            out = _run(["podman-compose", "--version"]).stdout
            m = re.search(r"podman-compose version (\d+)\.(\d+)", out) or re.search(r"(\d+)\.(\d+)\.\d+", out)
            return (int(m.group(1)), int(m.group(2))) if m else None

        pip_fix = f"{sys.executable} -m pip install 'podman-compose>=1.6,<2'"
        found = version() if shutil.which("podman-compose") else None
        if found and found >= MIN_COMPOSE:
            return Check(name="compose", status=Status.OK, detail=f"podman-compose {'.'.join(map(str, found))}")
        if self.fix and _run(pip_fix.replace("'", "").split(), timeout=600).returncode == 0:
            found = version()
            if found and found >= MIN_COMPOSE:
                return Check(name="compose", status=Status.FIXED, detail=f"installed podman-compose {found[0]}.{found[1]}")
        detail = (
            "podman-compose is not installed" if not found
            else f"podman-compose {found[0]}.{found[1]} is too old for Harbor (need >= 1.1)"
        )
        return Check(name="compose", status=Status.FAIL, detail=detail, fix=pip_fix)

    def _image_exists(self, image: str) -> bool:
        """Present locally: under its own name, or (digest-pinned / mirror-prefixed) under its standard name."""
        if _run([self.engine, "image", "inspect", canonical(image)], timeout=30).returncode == 0:
            return True
        try:
            ref = parse_ref(image)
        except ValueError:
            return False
        return ref.standard != canonical(image) and image_id(self.engine, ref.standard) is not None

    def probe_image(self) -> Check:
        """The Debian base every stand-in builds on; built before the others, which start from it."""
        return self.base_images([PROBE_IMAGE], name="debian base")

    def base_images(self, images: list[str] | None = None, name: str = "base images") -> Check:
        """One check for ``images``: ok, fixed, or the first failure (all of them: ``base_image_checks``)."""
        checks = self.base_image_checks(images, name)
        failed = [c for c in checks if not c.ok]
        return failed[0] if failed else checks[0]

    def _used_by(self, image: str) -> str:
        tasks = self.users.get(image) or []
        if not tasks:
            return ""
        shown = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
        return f" (used by {shown})"

    def _cannot(self, image: str, why: str, fix: str) -> Check:
        return Check(name=f"base image {image}", status=Status.FAIL, detail=f"{why}{self._used_by(image)}", fix=fix)

    def _map_fix(self, image: str) -> str:
        return f"make it available ({self.engine} load -i image.tar) or map it: --image-map {image}=<a local image>"

    def base_image_checks(self, images: list[str] | None = None, name: str = "base images") -> list[Check]:
        """Every image the tasks need, each provided or named: a first check for those present, pulled or stood in,
        then one failing check per image that cannot be provided, with its reason and the tasks that use it."""
        images = self.images if images is None else images
        missing = [i for i in images if not self._image_exists(i)]
        if not missing:
            return [Check(name=name, status=Status.OK, detail=", ".join(images))]
        if not self.fix:
            standable = [i for i in missing if plan_standin(i) is not None]
            checks = [Check(name=name, status=Status.FAIL, detail=f"missing: {', '.join(standable)}",
                            fix="envevo doctor --fix  # pulls them, or builds Debian-based stand-ins and says what they are")
                      ] if standable else []
            checks += [self._cannot(i, f"missing, and --fix cannot provide it: {why_no_standin(i)}", self._map_fix(i))
                       for i in missing if i not in standable]
            return checks
        done: list[str] = []
        failed: list[Check] = []
        for image in missing:
            # A registry may be reachable on other hosts; here it is not, so the pull is bounded.
            self.progress(f"pulling {image} (at most 60 s)…")
            if _run([self.engine, "pull", "-q", canonical(image)], timeout=60).returncode == 0:
                done.append(f"pulled {image}")
                continue
            plan = plan_standin(image)
            if plan is None:
                failed.append(self._cannot(image, f"cannot pull it, and {why_no_standin(image)}", self._map_fix(image)))
                continue
            needs_debootstrap = plan.needs_debian and image_id(self.engine, plan.base) is None
            if needs_debootstrap and shutil.which("debootstrap") is None and not _apt_install(["debootstrap"]):
                failed.append(self._cannot(image, "cannot pull it, and debootstrap is missing", _apt_cmd(["debootstrap"])))
                continue
            try:
                entry = ensure_standin(self.engine, image, self.progress)
            except UserError as exc:
                failed.append(self._cannot(image, str(exc), f"envevo doctor --fix  # after making {image} available"))
                continue
            done.append(f"stand-in {entry.statement(image)}")
        present = [i for i in images if i not in missing]
        head = ([Check(name=name, status=Status.FIXED, detail="; ".join(done))] if done
                else [Check(name=name, status=Status.OK, detail=", ".join(present))] if present else [])
        return head + failed

    def _probe(self) -> subprocess.CompletedProcess:
        """Start a container that needs no image, so the check runs before any image exists.

        Its root filesystem is a temporary folder holding the host's `true` and the libraries it loads:
        podman runs it with --rootfs; docker, which has no such option, imports it as a throwaway image.
        """
        true = shutil.which("true") or "/bin/true"
        with tempfile.TemporaryDirectory(prefix="envevo-probe-") as tmp:
            rootfs = Path(tmp) / "rootfs"
            libs = re.findall(r"(/\S+) \(0x", _run(["ldd", true], timeout=10).stdout)  # none if static
            try:
                for src in (true, *libs):
                    dest = rootfs / src.lstrip("/")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(Path(src).resolve(), dest)
            except OSError as exc:
                return subprocess.CompletedProcess([true], 127, "", f"cannot prepare the probe's rootfs: {exc}")
            if self.dialect.runs_rootfs:
                return _run([self.engine, "run", "--rm", "--rootfs", str(rootfs), true], timeout=PROBE_TIMEOUT)
            tag = f"envevo-probe:{os.getpid()}"
            tar = _run(["tar", "-C", str(rootfs), "-cf", str(Path(tmp) / "rootfs.tar"), "."], timeout=60)
            imported = tar if tar.returncode else _run([self.engine, "import", str(Path(tmp) / "rootfs.tar"), tag])
            if imported.returncode:
                return imported
            try:
                return _run([self.engine, "run", "--rm", tag, true], timeout=PROBE_TIMEOUT)
            finally:
                _run([self.engine, "rmi", "-f", tag])

    def container_start(self) -> Check:
        proc = self._probe()
        conf = _paths.containers_conf()
        using = os.environ.get("CONTAINERS_CONF")
        if proc.returncode == 0:
            detail = f"{self.engine} run works" + (f" (CONTAINERS_CONF={using})" if using else "")
            return Check(name="container start", status=Status.OK, detail=detail)
        error = (proc.stderr.strip().splitlines() or ["unknown error"])[-1][:200]
        if proc.returncode == 127 and "timed out" in proc.stderr:  # busy (a command holds its storage), not refusing: no conf helps
            return Check(name="container start", status=Status.FAIL, detail=f"{self.engine} run did not end in {PROBE_TIMEOUT} s",
                         fix=f"{self.engine} ps -a  # see what holds the engine, then run envevo doctor again")
        if self.dialect.writes_containers_conf and self.fix and using in (None, str(conf)):
            conf.parent.mkdir(parents=True, exist_ok=True)
            conf.write_text(CONTAINERS_CONF)
            os.environ["CONTAINERS_CONF"] = str(conf)
            if self._probe().returncode == 0:
                return Check(name="container start", status=Status.FIXED,
                             detail=f"wrote {conf} (envevo applies it itself; for other tools: export CONTAINERS_CONF={conf})")
        return Check(name="container start", status=Status.FAIL, detail=f"{self.engine} run fails: {error}",
                     fix="envevo doctor --fix" if not self.fix
                     else f"unset CONTAINERS_CONF ({using}), then envevo doctor --fix" if using and using != str(conf)
                     else f"{self.engine} info  # check the engine itself"
                     + (f": {conf} did not make containers start" if self.dialect.writes_containers_conf else ""))

    def orphans(self) -> Check:
        from envevo.runtime import list_containers, sweep_orphans

        if self.fix:
            n = sweep_orphans(self.engine)
            if n:
                return Check(name="leftover sandboxes", status=Status.FIXED, detail=f"removed {n} from dead envevo runs")
        left = list_containers(self.engine)
        return Check(name="leftover sandboxes", status=Status.OK,
                     detail=f"{len(left)} envevo container(s) running" if left else "none")
