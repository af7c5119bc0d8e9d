"""What differs between the local container engines envevo drives, one object per engine.

Code elsewhere asks a dialect what an engine can do (`dialect_of(engine).mounts_in_build`) or for the argv of a
command (`.rm(...)`), never the engine's name: a new engine (or a lighter backend) is one more object here, and
`tests/test_engine_dialect.py` fails on an engine-name literal anywhere else in envevo/.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineDialect:
    name: str  # the CLI binary, and the value of `--env`
    system_packages: tuple[str, ...]  # the Debian packages `doctor --fix` installs for it
    daemonless: bool  # podman: no daemon to check; its OCI runtime (runc) and compose provider are checked instead
    rm_kills_at_once: bool  # docker's `rm -f` sends SIGKILL; podman's waits 10 s for each unless told `--time 0`
    stop_timeout_flag: str  # podman `stop --time`, docker `stop -t`
    run_pull_flag: str  # `run`'s pull policy for an image envevo built or loaded itself
    push_flags: bool  # podman's `push` takes --tls-verify and --digestfile; docker's daemon decides TLS, prints the digest
    mounts_in_build: bool  # podman's `build --volume` reaches RUN steps (the host CA); docker's build mounts nothing
    runs_rootfs: bool  # podman `run --rootfs DIR`; docker needs an image (doctor's probe imports a tarball)
    writes_containers_conf: bool  # podman reads CONTAINERS_CONF, which `doctor --fix` writes when containers fail
    builder_heredocs_from: tuple[int, ...] | None  # the engine version whose builder runs BuildKit heredocs (None: all)
    install_hint: str  # what to tell a user who lacks the engine and cannot have it installed by apt

    def rm(self, *ids: str) -> list[str]:
        """Remove containers now: a sandbox's PID 1 (`sleep infinity`) ignores SIGTERM, so no grace period."""
        return [self.name, "rm", "-f", *([] if self.rm_kills_at_once else ["--time", "0"]), *ids]

    def stop(self, name: str) -> list[str]:
        return [self.name, "stop", self.stop_timeout_flag, "0", name]

    def push(self, tag: str, *, tls_verify: bool, digest_file: str) -> list[str]:
        if not self.push_flags:
            return [self.name, "push", tag]
        return [self.name, "push", f"--tls-verify={'true' if tls_verify else 'false'}", "--digestfile", digest_file, tag]


PODMAN = EngineDialect(
    name="podman", system_packages=("podman", "runc", "debootstrap"), daemonless=True, rm_kills_at_once=False,
    stop_timeout_flag="--time", run_pull_flag="--pull=never", push_flags=True, mounts_in_build=True, runs_rootfs=True,
    writes_containers_conf=True, builder_heredocs_from=(5,), install_hint="apt-get install podman runc",
)
DOCKER = EngineDialect(
    name="docker", system_packages=("debootstrap",), daemonless=False, rm_kills_at_once=True, stop_timeout_flag="-t",
    run_pull_flag="--pull=missing", push_flags=False, mounts_in_build=False, runs_rootfs=False,
    writes_containers_conf=False, builder_heredocs_from=None,
    install_hint="install Docker Engine (https://docs.docker.com/engine/install/) or use --env podman",
)
DIALECTS: dict[str, EngineDialect] = {d.name: d for d in (PODMAN, DOCKER)}


@dataclass(frozen=True)
class SandboxBackend:
    """A lighter local sandbox than a container per trial, over images a container engine builds and holds."""

    name: str  # the value of `--env`, and its binary
    images: EngineDialect  # the engine that builds and caches the images it runs
    system_packages: tuple[str, ...]  # what `doctor --fix` installs from Debian
    needs: str  # what it needs from the host, for `envevo doctor`
    serves: str  # which tasks it runs; the others go to `images`' environments


BWRAP = SandboxBackend(
    name="bwrap", images=PODMAN, system_packages=("bubblewrap",),
    needs="bubblewrap (bwrap), root, user namespaces, overlayfs; podman builds the images",
    serves="tasks without compose and without network in any phase",
)
BACKENDS: dict[str, SandboxBackend] = {BWRAP.name: BWRAP}
LOCAL_ENGINES: tuple[str, ...] = tuple(DIALECTS)
DEFAULT_ENGINE = PODMAN.name  # every command's `--env` default, and the library's


def dialect_of(engine: str) -> EngineDialect:
    """The dialect of a local engine; ValueError for any other `--env` (a cloud type, an import path)."""
    try:
        return DIALECTS[engine]
    except KeyError:
        raise ValueError(f"{engine!r} is not a local engine ({' or '.join(LOCAL_ENGINES)})") from None


__all__ = ["BACKENDS", "BWRAP", "DEFAULT_ENGINE", "DIALECTS", "DOCKER", "LOCAL_ENGINES", "PODMAN", "EngineDialect",
           "SandboxBackend", "dialect_of"]
