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
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from envevo.errors import UserError
from envevo.sandbox import _paths, _tls
from envevo.sandbox._base_image import canonical
from envevo.sandbox._refs import dockerfile_bases, parse_ref
from envevo.sandbox._standins import (
    STANDIN_REPO,
    ensure_standin,
    image_id,
    load_registry,
    plan_standin,
    why_no_standin,
)
from envevo.task import expand_task_dirs

DEFAULT_IMAGES = ("debian:bookworm-slim",)
PROBE_IMAGE = "docker.io/library/debian:bookworm-slim"
PROBE_TIMEOUT = 120  # s for the container-start probe; a busy engine (a long commit holds its storage) can take minutes
MIN_COMPOSE = (1, 1)
SYSTEM_PACKAGES = {"podman": ["podman", "runc", "debootstrap"], "docker": ["debootstrap"]}
# Settings this host class needs (DESIGN.md §5): crun fails on hybrid cgroups, and setting container
# rlimits is not permitted. They are harmless where not needed, but written only when a probe fails.
CONTAINERS_CONF = """\
# Written by `envevo doctor --fix` because containers failed to start with the host defaults.
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""


class Status(StrEnum):
    OK = "ok"
    FIXED = "fixed"
    WARN = "warn"  # works, but something a task may need does not (e.g. HTTPS from containers)
    FAIL = "fail"


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    fix: str | None = None  # the command that repairs a failure

    @property
    def ok(self) -> bool:
        return self.status is not Status.FAIL


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


class Doctor:
    """Runs the checks in dependency order; later checks are skipped when an earlier one fails."""

    def __init__(self, env: str = "podman", fix: bool = False, images: Iterable[str] = DEFAULT_IMAGES,
                 trust_host_ca: bool = False, progress: Callable[[str], None] | None = None):
        if env not in ("podman", "docker"):
            raise UserError(f"doctor checks local sandboxes only (podman or docker), not {env!r}")
        self.engine = env
        self.fix = fix
        self.trust_host_ca = trust_host_ca
        self.images = list(dict.fromkeys(images)) or list(DEFAULT_IMAGES)
        self.checks: list[Check] = []
        self.progress = progress or (lambda _msg: None)

    def run(self) -> list[Check]:
        _paths.activate()
        steps: list[Callable[[], Check]] = [self.python, self.engine_installed]
        if self.engine == "podman":
            steps += [self.runc, self.compose]
        else:
            steps += [self.docker_daemon]
        # Containers must start before any image is built: building a stand-in starts one, and on a fresh
        # host only container_start writes the containers.conf that lets them start (DESIGN.md §5).
        steps += [self.container_start, self.probe_image, self.base_images, self.orphans, self.tls]
        for step in steps:
            check = step()
            self.checks.append(check)
            if not check.ok:
                break
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
        if self.engine == "docker":
            if shutil.which("docker"):
                return Check(name="docker", status=Status.OK, detail=shutil.which("docker") or "docker")
            return Check(name="docker", status=Status.FAIL, detail="docker is not installed",
                         fix="install Docker Engine (https://docs.docker.com/engine/install/) or use --env podman")
        check = self._package_check("podman", "podman", SYSTEM_PACKAGES["podman"])
        if check.ok:
            version = _run(["podman", "--version"]).stdout.strip()
            check.detail = version or check.detail
        return check

    def docker_daemon(self) -> Check:
        proc = _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20)
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
        images = self.images if images is None else images
        missing = [i for i in images if not self._image_exists(i)]
        if not missing:
            return Check(name=name, status=Status.OK, detail=", ".join(images))
        if not self.fix:
            return Check(name=name, status=Status.FAIL, detail=f"missing: {', '.join(missing)}",
                         fix="envevo doctor --fix  # pulls them, or builds Debian-based stand-ins and says what they are")
        done = []
        for image in missing:
            # A registry may be reachable on other hosts; here it is not, so the pull is bounded.
            self.progress(f"pulling {image} (at most 60 s)…")
            if _run([self.engine, "pull", "-q", canonical(image)], timeout=60).returncode == 0:
                done.append(f"pulled {image}")
                continue
            if plan_standin(image) is None:
                return Check(name=name, status=Status.FAIL,
                             detail=f"cannot pull {image}, and {why_no_standin(image)}" + (f" (done: {'; '.join(done)})" if done else ""),
                             fix=f"make it available ({self.engine} load -i image.tar) or map it: --image-map {image}=<a local image>")
            needs_debootstrap = image_id(self.engine, f"docker.io/library/debian:{plan_standin(image).suite}-slim") is None  # type: ignore[union-attr]
            if needs_debootstrap and shutil.which("debootstrap") is None and not _apt_install(["debootstrap"]):
                return Check(name=name, status=Status.FAIL,
                             detail=f"cannot pull {image} and debootstrap is missing", fix=_apt_cmd(["debootstrap"]))
            try:
                entry = ensure_standin(self.engine, image, self.progress)
            except UserError as exc:
                return Check(name=name, status=Status.FAIL, detail=str(exc),
                             fix=f"envevo doctor --fix  # after making {image} available")
            done.append(f"stand-in {entry.statement(image)}")
        return Check(name=name, status=Status.FIXED, detail="; ".join(done))

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
        from envevo.runtime import host_ca as _host_ca

        name = "https from containers"
        host_ok, host_why = _tls.host_reaches()
        if not host_ok:
            return Check(name=name, status=Status.WARN, detail=f"the host itself cannot reach {_tls.PROBE_URL} ({host_why}); not checked")
        image = self._python_probe_image()
        if image is None:
            return Check(name=name, status=Status.OK,
                         detail="not checked: no local image with python3 (envevo doctor --trust-host-ca builds python:3.13-slim to probe)")
        trusted = _host_ca.bundle() is not None
        self.progress(f"probing {_tls.PROBE_URL} from a container…")
        ok, why = _tls.container_reaches(self.engine, image, trust_host_ca=trusted)
        if ok:
            return Check(name=name, status=Status.OK, detail=f"containers reach {_tls.PROBE_URL}"
                         + (f" (trusting the host CA bundle {_host_ca.bundle()})" if trusted else ""))
        intercepted = "CERTIFICATE_VERIFY_FAILED" in why or "certificate verify failed" in why
        if not intercepted:
            return Check(name=name, status=Status.WARN, detail=f"the host reaches {_tls.PROBE_URL}, containers do not: {why}",
                         fix=f"{self.engine} run --rm {image} python3 -c "
                             f"'import urllib.request as u; u.urlopen(\"{_tls.PROBE_URL}\")'  # and read the error")
        if not trusted and self.trust_host_ca and (bundle := _tls.host_bundle()) is not None:
            _tls.record_trust(bundle)
            ok, why = _tls.container_reaches(self.engine, image, trust_host_ca=True)
            if ok:
                return Check(name=name, status=Status.FIXED,
                             detail=f"TLS-intercepting proxy: builds and containers now trust the host CA bundle {bundle} "
                                    f"(recorded in {_tls.trust_file()})")
        detail = ("a TLS-intercepting proxy: the host verifies " + _tls.PROBE_URL + " with its CA bundle, containers fail ("
                  + why + ")")
        if trusted:
            return Check(name=name, status=Status.WARN, detail=detail + f", even trusting {_host_ca.bundle()}",
                         fix=f"check that {_host_ca.bundle()} holds the proxy's CA")
        return Check(name=name, status=Status.WARN, detail=detail + "; pip and curl over HTTPS will fail in tasks",
                     fix="envevo doctor --trust-host-ca  # mounts the host's CA bundle into builds and containers")

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
            if self.engine == "podman":
                return _run(["podman", "run", "--rm", "--rootfs", str(rootfs), true], timeout=PROBE_TIMEOUT)
            tag = f"envevo-probe:{os.getpid()}"
            tar = _run(["tar", "-C", str(rootfs), "-cf", str(Path(tmp) / "rootfs.tar"), "."], timeout=60)
            imported = tar if tar.returncode else _run(["docker", "import", str(Path(tmp) / "rootfs.tar"), tag])
            if imported.returncode:
                return imported
            try:
                return _run(["docker", "run", "--rm", tag, true], timeout=PROBE_TIMEOUT)
            finally:
                _run(["docker", "rmi", "-f", tag])

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
        if self.engine == "podman" and self.fix and using in (None, str(conf)):
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
                     + (f": {conf} did not make containers start" if self.engine == "podman" else ""))

    def orphans(self) -> Check:
        from envevo.runtime import list_containers, sweep_orphans

        if self.fix:
            n = sweep_orphans(self.engine)
            if n:
                return Check(name="leftover sandboxes", status=Status.FIXED, detail=f"removed {n} from dead envevo runs")
        left = list_containers(self.engine)
        return Check(name="leftover sandboxes", status=Status.OK,
                     detail=f"{len(left)} envevo container(s) running" if left else "none")


def images_of(task_dirs: Iterable[Path]) -> list[str]:
    """External images the tasks build FROM or name (build stages excluded, ARG defaults expanded).

    Folders of tasks are walked; Terminal-Bench 1 tasks (Dockerfile at the root) are read too. A task
    that does not load is read for its Dockerfiles directly, so doctor still prepares its images.
    """
    from envevo.errors import TaskError
    from envevo.task import load_task, task_images

    images: list[str] = []
    for d in expand_task_dirs(task_dirs):
        try:
            images.extend(task_images(load_task(d)))
        except TaskError:
            for dockerfile in (Path(d) / "environment" / "Dockerfile", Path(d) / "Dockerfile"):
                if dockerfile.is_file():
                    images.extend(dockerfile_bases(dockerfile.read_text(errors="replace")))
    return list(dict.fromkeys(images))
