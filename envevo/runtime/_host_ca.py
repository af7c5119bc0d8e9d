"""Let builds and containers trust the host's CA bundle, for hosts behind a TLS-intercepting proxy.

`envevo doctor --fix` turns this on when it finds such a proxy (`--trust-host-ca` forces it, `--no-trust-host-ca`
turns it off); `envevo.sandbox.activate()` then exports the recorded bundle as ENVEVO_HOST_CA_BUNDLE.

Nothing is mounted over the image's own CA store (`apt-get install ca-certificates` rewrites
/etc/ssl/certs/ca-certificates.crt, and fails on a read-only mount there). Instead a folder of envevo's, holding a
copy of the bundle and two small config files, is mounted read-only at MOUNT_DIR, and the variables that OpenSSL
(Python's ssl, uv), requests, pip, curl, git, node, apt and wget read point at it:

- containers: `--env` and `--volume` at `run` (compose services: the same, through an overlay);
- builds (every RUN step): `--volume` for RUN steps, and the Dockerfile is read from a temporary copy that declares
  the variables as `ARG`s after each `FROM`, given by `--build-arg`. An ARG is not an ENV: the built image's
  configuration does not carry the variables. What the image keeps is the mount point, an empty MOUNT_DIR folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from envevo._home import home
from envevo.runtime._engine_dialect import DIALECTS

ENV_VAR = "ENVEVO_HOST_CA_BUNDLE"
MOUNT_DIR = "/run/envevo-host-ca"
CONTAINER_BUNDLE = f"{MOUNT_DIR}/ca-bundle.crt"
APT_CONF = f"{MOUNT_DIR}/apt.conf"
WGETRC = f"{MOUNT_DIR}/wgetrc"
_CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                 "NODE_EXTRA_CA_CERTS")
# apt reads the file APT_CONFIG names before its own config; wget reads WGETRC instead of ~/.wgetrc.
_CONFIG_VARIABLES = {"APT_CONFIG": APT_CONF, "WGETRC": WGETRC}
_FILES = {
    "apt.conf": f'Acquire::https::CAInfo "{CONTAINER_BUNDLE}";\n',
    "wgetrc": f"ca_certificate = {CONTAINER_BUNDLE}\n",
}


def bundle() -> Path | None:
    value = os.environ.get(ENV_VAR)
    return Path(value) if value and Path(value).is_file() else None


def variables() -> tuple[str, ...]:
    """The names set in builds and containers when the host CA is trusted."""
    return (*_CA_VARIABLES, *_CONFIG_VARIABLES)


def ca_env() -> dict[str, str]:
    """The variables for containers (and RUN steps) when the host CA is trusted; empty when it is not."""
    if bundle() is None:
        return {}
    return {**{name: CONTAINER_BUNDLE for name in _CA_VARIABLES}, **_CONFIG_VARIABLES}


def _state_dir() -> Path:
    return home() / "host-ca"


def host_dir() -> Path | None:
    """The folder mounted at MOUNT_DIR for the current bundle; None when the host CA is not trusted.

    The bundle is copied (not linked: a link would dangle in the container) into a folder named by its content, so
    a changed host bundle, or another process trusting another bundle, never rewrites what a running container has
    mounted."""
    b = bundle()
    if b is None:
        return None
    data = b.read_bytes()
    folder = _state_dir() / hashlib.sha256(data).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {"ca-bundle.crt": data, **{k: v.encode() for k, v in _FILES.items()}}
    for name, data in wanted.items():
        path = folder / name
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        # Atomic: a container that has the folder mounted sees the old file or the new one, never half of one.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return folder


def volume_args() -> list[str]:
    """`--volume` arguments for `podman build` and `podman run`; empty when the host CA is not trusted."""
    folder = host_dir()
    return ["--volume", f"{folder.resolve()}:{MOUNT_DIR}:ro"] if folder else []


def env_args() -> list[str]:
    """`--env` arguments for `podman run`; empty when the host CA is not trusted."""
    return [a for k, v in ca_env().items() for a in ("--env", f"{k}={v}")]


# -- builds ---------------------------------------------------------------------------------------

_FROM = re.compile(r"^\s*FROM\s", re.I)
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def declare_args(dockerfile: str) -> str:
    """The Dockerfile with `ARG <name>` for every trust variable after each `FROM`, so RUN steps see the
    `--build-arg` values. Continuation lines and heredoc bodies are kept whole; nothing else changes."""
    lines = dockerfile.splitlines(keepends=True)
    declared = "".join(f"ARG {name}\n" for name in variables())
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        is_from = bool(_FROM.match(line))
        # An instruction goes on while its line ends in a backslash; a heredoc runs to its terminator.
        heredocs = [m.group(3) for m in _HEREDOC.finditer(line)] if not line.lstrip().startswith("#") else []
        while i < len(lines) and line.rstrip("\r\n").endswith("\\"):
            line = lines[i]
            out.append(line)
            i += 1
            if not line.lstrip().startswith("#"):
                heredocs += [m.group(3) for m in _HEREDOC.finditer(line)]
        for word in heredocs:
            while i < len(lines):
                body = lines[i]
                out.append(body)
                i += 1
                if body.strip() == word:
                    break
        if is_from:
            if not out[-1].endswith(("\n", "\r")):
                out[-1] += "\n"
            out.append(declared)
    return "".join(out)


class BuildTrust:
    """The arguments that make one `podman build` trust the host CA: a context manager, since the rewritten
    Dockerfile lives in a temporary folder for the build's duration. Empty when the host CA is not trusted, and for
    docker, whose `build` mounts nothing into RUN steps."""

    def __init__(self, engine: str, dockerfile: Path):
        self.engine = engine
        self.dockerfile = dockerfile
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> list[str]:
        engine = DIALECTS.get(self.engine)
        folder = host_dir() if engine is not None and engine.mounts_in_build else None
        if folder is None or not self.dockerfile.is_file():
            return []
        self._tmp = tempfile.TemporaryDirectory(prefix="envevo-ca-build-")
        copy = Path(self._tmp.name) / self.dockerfile.name
        copy.write_text(declare_args(self.dockerfile.read_text(errors="replace")))
        build_args = [a for k, v in ca_env().items() for a in ("--build-arg", f"{k}={v}")]
        return ["-f", str(copy), "--volume", f"{folder.resolve()}:{MOUNT_DIR}:ro", *build_args]

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def rewritten_dockerfile(dockerfile: Path, into: Path) -> Path:
    """Write the ARG-declaring copy of `dockerfile` into the folder `into` (named by its content, so two services'
    Dockerfiles do not collide); its path."""
    text = declare_args(dockerfile.read_text(errors="replace"))
    path = into / f"Dockerfile.{hashlib.sha256(str(dockerfile.resolve()).encode()).hexdigest()[:12]}"
    path.write_text(text)
    return path
