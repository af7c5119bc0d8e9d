"""Build each task environment once, cached by content digest, on the local engines.

The tag is derived from the environment's content (`localhost/envevo-cache:<digest>`), so an edited task gets a
new one and every later trial, shell or exploit of the same content starts from the cached image. Images carry
the label `envevo.cache=1`, so the image budget (envevo/sandbox) can find and prune them. A failed build leaves
no intermediate containers (`--force-rm`) and no intermediate images (removed right after it fails), and is not
retried by the other trials of the same run.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import weakref
from pathlib import Path

from envevo.runtime._engine_cli import _collect
from envevo.runtime._host_ca import BuildTrust

CACHE_REPO = "localhost/envevo-cache"
CACHE_LABEL = "envevo.cache"

# One build per tag at a time, per event loop (asyncio locks are bound to the loop that first waits on them).
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()
# Layers of failed builds wait until no build of this process runs: a concurrent build of another task may be
# using one of them as its cached parent right now, and removing it under that build fails it.
_active: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list] = weakref.WeakKeyDictionary()
# Tags whose build failed in this run (this event loop), with the build's output: every later trial of the same
# content reports that failure instead of rebuilding it (a failed build cost 250-340 s, once per trial).
_failed: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, str]] = weakref.WeakKeyDictionary()
# Tags this run (this event loop) built or saw present: the next trial of the same content skips `image exists`
# (two engine calls per trial). Something outside may still remove one (a prune, a user's rmi): the container
# start then says "image not known", forgets it (`forget_cached_image`) and builds again.
_present: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[str]] = weakref.WeakKeyDictionary()
NOT_REBUILT = "not rebuilt: this environment's build already failed in this run; its output follows"


def environment_digest(env_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in env_dir.rglob("*") if p.is_file()):
        h.update(path.relative_to(env_dir).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:24]


def cache_tag(env_dir: Path) -> str:
    return f"{CACHE_REPO}:{environment_digest(env_dir)}"


def _lock(tag: str) -> asyncio.Lock:
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(tag, asyncio.Lock())


async def build_cached_image(engine: str, env_dir: Path, *, force: bool = False, extra_args: list[str] | None = None,
                             timeout: float = 1800) -> tuple[bool, str, str]:
    """Build `env_dir` under its cache tag unless that image exists; (ok, tag, build output)."""
    tag = cache_tag(env_dir)
    failed = _failed.setdefault(asyncio.get_running_loop(), {})
    async with _lock(tag):
        if not force and tag in failed:
            return False, tag, f"{NOT_REBUILT}\n{failed[tag]}"
        present = _present.setdefault(asyncio.get_running_loop(), set())
        if not force and tag in present:
            return True, tag, ""
        if not force and (await _collect([engine, "image", "exists", tag], timeout=60))[0] == 0:
            present.add(tag)
            return True, tag, ""
        state = _active.setdefault(asyncio.get_running_loop(), [0, []])  # [builds running, layers to remove]
        state[0] += 1
        try:
            ok, output = await _build(engine, env_dir, tag, extra_args, timeout)
            if not ok and _STORE_CHANGED in output.lower():
                # Another process's prune removed a layer this build's cache lookup had found: the store is
                # consistent again, so building once more reuses what is left and rebuilds the rest.
                ok, output = await _build(engine, env_dir, tag, extra_args, timeout)
        finally:
            state[0] -= 1
        if ok:
            present.add(tag)
        else:
            state[1] += _STEP_IMAGE.findall(output)
            failed[tag] = output
        if state[0] == 0 and state[1]:
            doomed, state[1] = state[1], []
            await _remove_layers(engine, doomed)
        return ok, tag, output


def forget_cached_image(tag: str) -> None:
    """The engine no longer has `tag` (removed from outside this run): the next build checks and builds it again."""
    _present.get(asyncio.get_running_loop(), set()).discard(tag)


def image_missing(engine_error: str) -> bool:
    """Whether a container start failed because its image is gone (podman: "image not known"; docker: "No such
    image" / "Unable to find image")."""
    text = engine_error.lower()
    return any(s in text for s in ("image not known", "no such image", "unable to find image"))


async def _build(engine: str, env_dir: Path, tag: str, extra_args: list[str] | None, timeout: float) -> tuple[bool, str]:
    # Behind a TLS-intercepting proxy whose CA the host trusts, every RUN step trusts it too (envevo/runtime/_host_ca.py).
    with BuildTrust(engine, env_dir / "Dockerfile") as trust:
        code, out, _ = await _collect(
            [engine, "build", "--force-rm", "--label", f"{CACHE_LABEL}=1", "-t", tag, *trust, *(extra_args or []),
             str(env_dir)], timeout=timeout, merge_stderr=True)
    if code == 0:
        return True, out.decode(errors="replace")
    # What the bases really are, for a verdict on the failure (a stand-in's Python lacking a pinned wheel).
    said = await standin_statements(engine, env_dir / "Dockerfile")
    return False, "".join(f"{STANDIN_LINE}{s}\n" for s in said) + out.decode(errors="replace")


# A failed build's log starts with one such line per base image that is a local stand-in (its `envevo.standin` label).
STANDIN_LINE = "envevo: base image stood in for on this host: "
_FROM_IMAGE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>[^\s$]+)", re.IGNORECASE | re.M)


async def standin_statements(engine: str, dockerfile: Path) -> list[str]:
    """The stand-in statement of each FROM image of `dockerfile` that carries one; nothing for others."""
    from envevo.task import without_heredoc_bodies

    try:
        text = without_heredoc_bodies(dockerfile.read_text(errors="replace"))
    except OSError:
        return []
    said = []
    for image in dict.fromkeys(m["image"] for m in _FROM_IMAGE.finditer(text)):
        code, out, _ = await _collect([engine, "image", "inspect", "--format", '{{index .Labels "envevo.standin"}}',
                                       image], timeout=30)
        label = out.decode(errors="replace").strip()
        if code == 0 and label and label != "<no value>":
            said.append(label if "→" in label else f"{image} → {label}")
    return said


# podman's word for a layer removed under a running build (a prune by another process).
_STORE_CHANGED = "layer not known"
# podman prints "--> <id>" after each step it commits; a failed build leaves those layers behind, untagged.
_STEP_IMAGE = re.compile(r"^--> ([0-9a-f]{6,64})\s*$", re.M)


async def _remove_layers(engine: str, ids: list[str]) -> None:
    """Remove the intermediate images failed builds committed. An id another image still builds on is kept
    (the engine refuses to remove it), so nothing shared is lost."""
    ids = list(dict.fromkeys(ids))
    for image in reversed(ids):  # children before parents
        await _collect([engine, "rmi", image], timeout=120)


class ImageCache:
    """Warm the cache before a Harbor compose trial, whose own per-trial build then hits the cached layers."""

    def __init__(self, engine: str):
        self.engine = engine

    async def warm(self, task_dir: Path) -> None:
        env_dir = task_dir / "environment"
        if (env_dir / "Dockerfile").is_file():
            # A failed build is not an error here: the trial's own build fails the same way and reports it.
            await build_cached_image(self.engine, env_dir)
