"""Image references as task Dockerfiles write them, split into registry, repository, tag and digest.

``public.ecr.aws/docker/library/debian:bookworm-slim@sha256:…`` names the same official image as
``debian:bookworm-slim`` (pinned to one build); ``official`` gives that Docker Hub library name, which
is what a local stand-in is tagged under.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envevo.task import expand_image_args, without_heredoc_bodies

DOCKER_HUB = "docker.io"
# Registries that serve Docker Hub's official ("library") images under another prefix.
_LIBRARY_MIRRORS = (
    "docker.io/library/",
    "index.docker.io/library/",
    "registry-1.docker.io/library/",
    "public.ecr.aws/docker/library/",
    "mirror.gcr.io/library/",
    "mirror.gcr.io/",
)
_DIGEST = re.compile(r"^[A-Za-z0-9_+.-]+:[0-9a-fA-F]{32,}$")


@dataclass(frozen=True)
class ImageRef:
    registry: str  # "docker.io" when the reference names none
    repository: str  # "library/python", "org/img"
    tag: str | None  # None when only a digest (or nothing) is given
    digest: str | None  # "sha256:…"
    raw: str

    @property
    def official(self) -> str | None:
        """The Docker Hub library name ("python"), or None if this is not an official image."""
        full = f"{self.registry}/{self.repository}/"
        for prefix in _LIBRARY_MIRRORS:
            if full.startswith(prefix):
                rest = full[len(prefix):].rstrip("/")
                return rest if rest and "/" not in rest else None
        return None

    @property
    def standard(self) -> str:
        """The fully qualified, digest-free name a local image can be tagged under."""
        tag = self.tag or "latest"
        if self.official:
            return f"docker.io/library/{self.official}:{tag}"
        return f"{self.registry}/{self.repository}:{tag}"

    @property
    def short(self) -> str:
        """How people write it: ``python:3.12-slim``, ``ghcr.io/org/img:tag`` (digest kept)."""
        name = self.official or (self.repository if self.registry == DOCKER_HUB else f"{self.registry}/{self.repository}")
        out = f"{name}:{self.tag or 'latest'}"
        return f"{out}@{self.digest}" if self.digest else out

    @property
    def pinned_or_prefixed(self) -> bool:
        """True when the reference is not the plain standard name (digest, mirror or explicit registry)."""
        return self.raw != self.standard


def parse_ref(reference: str) -> ImageRef:
    """Split ``[registry[:port]/]path[:tag][@digest]``; raises ValueError for something that is not one."""
    raw = reference.strip()
    if not raw or any(c.isspace() for c in raw) or "$" in raw:
        raise ValueError(f"not an image reference: {reference!r}")
    rest, digest = raw, None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not _DIGEST.match(digest):
            raise ValueError(f"bad digest in image reference {reference!r}")
    tag = None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
        if not tag:
            raise ValueError(f"empty tag in image reference {reference!r}")
    parts = rest.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry, path = parts[0], "/".join(parts[1:])
    else:
        registry, path = DOCKER_HUB, rest
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not path or not re.match(r"^[a-z0-9][a-z0-9._/-]*$", path):
        raise ValueError(f"bad repository name in image reference {reference!r}")
    return ImageRef(registry=registry, repository=path, tag=tag, digest=digest, raw=raw)


_FROM = re.compile(r"^\s*FROM\s+(?P<flags>(?:--\S+\s+)*)(?P<image>[^\s#]+)(?:\s+AS\s+(?P<stage>\S+))?", re.IGNORECASE)
_ARG = re.compile(r"^\s*ARG\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:=(?P<q>[\"']?)(?P<value>[^\s\"']*)(?P=q))?\s*$", re.IGNORECASE)
# `COPY [--chown=…] --from=<stage, index or image> src… dest`; `RUN --mount=type=bind,from=<…>,source=…,target=…`.
_COPY_FROM = re.compile(r"^\s*COPY\s+(?:--\S+\s+)*?--from=(?P<q>[\"']?)(?P<image>[^\s\"']+)(?P=q)(?:\s|$)", re.IGNORECASE)
_MOUNT_FROM = re.compile(r"(?:^|,)from=(?P<image>[^,\s]+)", re.IGNORECASE)


def dockerfile_bases(text: str) -> list[str]:
    """External images a Dockerfile builds FROM, in order: build stages skipped, ARG defaults expanded,
    CRLF line ends and ``FROM --platform=… x AS y`` handled. Unresolvable references are skipped."""
    return list(dict.fromkeys(image for image, how in _scan(text) if how == "FROM"))


def dockerfile_images(text: str) -> list[str]:
    """Every external image a Dockerfile needs, in order: its FROM bases, and the images ``COPY --from=`` and
    ``RUN --mount=…,from=`` read files from (``COPY --from=ghcr.io/astral-sh/uv:0.9 /uv /bin/``). A name of an
    earlier build stage (``FROM x AS build`` … ``COPY --from=build``) or a stage index (``--from=0``) is not an
    image; ``scratch`` is none either."""
    return list(dict.fromkeys(image for image, _ in _scan(text)))


def dockerfile_image_uses(text: str) -> list[tuple[str, str]]:
    """(image, how) for each external image a Dockerfile needs: how is ``FROM``, ``COPY --from`` or ``RUN --mount``."""
    return list(dict.fromkeys(_scan(text)))


def _scan(text: str) -> list[tuple[str, str]]:
    args: dict[str, str] = {}
    stages: set[str] = set()
    found: list[tuple[str, str]] = []
    seen_from = False

    def external(image: str | None) -> str | None:
        if not image:
            return None
        expanded = expand_image_args(image, args) if "$" in image else image
        if not expanded or expanded.lower() in stages or expanded.lower() == "scratch" or expanded.isdigit():
            return None
        return expanded

    # Heredoc bodies are not instructions (``from x import y`` in ``RUN python - <<EOF``), as the builder reads them.
    text = without_heredoc_bodies(text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.replace("\\\n", " ").split("\n")
    for line in lines:
        if m := _ARG.match(line):
            if m["value"] is not None and not seen_from:  # only global ARGs (before the first FROM) reach FROM lines
                args[m["name"]] = m["value"]
            continue
        if m := _FROM.match(line):
            seen_from = True
            if image := external(m["image"]):
                found.append((image, "FROM"))
            if m["stage"]:
                stages.add(m["stage"].lower())
        elif m := _COPY_FROM.match(line):
            if image := external(m["image"]):
                found.append((image, "COPY --from"))
        elif line.lstrip()[:3].upper() == "RUN":
            for spec in re.findall(r"--mount=(\S+)", line.split("&&")[0]):
                if (f := _MOUNT_FROM.search(spec)) and (image := external(f["image"])):
                    found.append((image, "RUN --mount"))
    return found
