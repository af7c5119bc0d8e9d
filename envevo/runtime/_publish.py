"""Prebuilt images for exported tasks: build an environment under its content tag, name it for a registry, push it.

Runners that cannot build (verifiers/prime-rl's Harbor taskset) or clusters that want no builds on their nodes read
`docker_image` from task.toml. The image is named by the environment's content digest, so a re-export of unchanged
content names the same image; a push answers with the registry's manifest digest, and the reference written is
pinned to it (`repo@sha256:…`), so what a trainer pulls is exactly what was built here.
"""

from __future__ import annotations

import ipaddress
import tempfile
from pathlib import Path

from pydantic import BaseModel

from envevo.errors import UserError
from envevo.runtime._engine_cli import _run
from envevo.runtime._engine_dialect import dialect_of
from envevo.runtime._image_cache import build_cached_image, environment_digest


class PublishError(UserError):
    """An image could not be built, tagged or pushed; the message names the step and the engine's words."""


class PublishedImage(BaseModel):
    context: Path
    tag: str  # repository:content-digest, on this host
    reference: str  # what task.toml names: the tag, or repository@sha256:… once pushed
    pushed: bool = False


def is_loopback_registry(repository: str) -> bool:
    """Whether the registry host is this machine (127.0.0.0/8, ::1, localhost), which serves plain HTTP in tests
    and on most private mirrors: docker treats it as insecure by default, podman needs `--tls-verify=false`."""
    host = repository.split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def publish_image(engine: str, context: Path, repository: str, *, push: bool,
                        tls_verify: bool | None = None) -> PublishedImage:
    """Build `context` (a folder with a Dockerfile), tag it `repository:<content digest>`, push it when asked.

    `tls_verify` None means: verify, except for a loopback registry."""
    ok, cached, output = await build_cached_image(engine, context)
    if not ok:
        last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "no output")
        raise PublishError(f"building {context} failed: {last.strip()[:300]}")
    tag = f"{repository}:{environment_digest(context)}"
    code, _, err = await _run(engine, "tag", cached, tag, timeout=120)
    if code != 0:
        raise PublishError(f"{engine} tag {cached} {tag} failed: {err.strip()[:300]}")
    if not push:
        return PublishedImage(context=context, tag=tag, reference=tag)
    verify = not is_loopback_registry(repository) if tls_verify is None else tls_verify
    with tempfile.TemporaryDirectory(prefix="envevo-push-") as tmp:
        digest_file = Path(tmp) / "digest"
        args = dialect_of(engine).push(tag, tls_verify=verify, digest_file=str(digest_file))
        code, out, err = await _run(*args, timeout=1800)
        if code != 0:
            raise PublishError(f"pushing {tag} failed: {(err or out).strip().splitlines()[-1][:300] if (err or out).strip() else code}")
        digest = digest_file.read_text().strip() if digest_file.is_file() else _digest_in(out)
    if not digest.startswith("sha256:"):
        raise PublishError(f"pushing {tag}: the registry answered with no manifest digest")
    return PublishedImage(context=context, tag=tag, reference=f"{repository}@{digest}", pushed=True)


def _digest_in(text: str) -> str:
    words = [w for w in text.split() if w.startswith("sha256:")]
    return words[-1] if words else ""
