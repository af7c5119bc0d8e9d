"""Image budget: remove envevo's cache images, least recently built first, and dangling build leftovers.

Podman 4.3 records no last-use time for an image, so "least recently used" is approximated by the image's
Created time (when envevo's cache build made it; a cache hit does not refresh it). Only images named
``localhost/envevo-cache:*`` or labelled ``envevo.cache=1`` are candidates, plus dangling (untagged) images
older than an hour. Stand-ins (``envevo.standin`` label, ``localhost/envevo-standin``) and base images are
kept unless ``include_standins`` is asked for; an image a container uses is never removed.

Disk use is measured with ``du`` of podman's storage where possible: ``podman system df`` adds every image's
full size and so counts shared layers many times (54 GB reported for 2.3 GB on disk, docs/sandbox.md "Image budget").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterable

from pydantic import BaseModel, Field

from envevo.runtime import CACHE_REPO

DEFAULT_BUDGET_GB = 20.0
BUDGET_ENV = "ENVEVO_IMAGE_BUDGET_GB"
GB = 1024**3
DANGLING_GRACE_S = 3600  # a build in progress may own a young untagged image


class LocalImage(BaseModel):
    id: str
    names: list[str] = Field(default_factory=list)
    created: float = 0.0
    size: int = 0
    shared: int = 0
    labels: dict[str, str] = Field(default_factory=dict)
    containers: int = 0

    @property
    def unique(self) -> int:
        return max(self.size - self.shared, 0)

    @property
    def dangling(self) -> bool:
        return not self.names

    @property
    def cache(self) -> bool:
        return any(n.startswith(CACHE_REPO + ":") for n in self.names) or self.labels.get("envevo.cache") == "1"

    @property
    def standin(self) -> bool:
        return (not self.cache and "envevo.standin" in self.labels) or any(n.startswith("localhost/envevo-standin:") for n in self.names)


class PruneResult(BaseModel):
    removed: list[LocalImage] = Field(default_factory=list)
    images_before: int = 0
    images_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    errors: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        return (f"removed {len(self.removed)} image(s); images {self.images_before} → {self.images_after}, "
                f"disk {self.bytes_before / GB:.2f} → {self.bytes_after / GB:.2f} GB")


def select_prune(
    images: Iterable[LocalImage],
    *,
    now: float,
    used_bytes: int,
    older_than_days: float | None = None,
    max_bytes: int | None = None,
    include_standins: bool = False,
    all_cache: bool = False,
) -> list[LocalImage]:
    """Which images to remove, in removal order (pure). Dangling ones first, then cache images oldest first:
    all of them (``all_cache``), those older than ``older_than_days``, and as many more as it takes to
    bring ``used_bytes`` under ``max_bytes`` (each removal counted as freeing its unique size)."""
    images = [i for i in images if i.containers == 0]
    chosen: list[LocalImage] = [i for i in images if i.dangling and now - i.created > DANGLING_GRACE_S]
    pool = sorted((i for i in images if not i.dangling and (i.cache or (include_standins and i.standin))),
                  key=lambda i: i.created)
    for img in pool:
        if all_cache or (older_than_days is not None and now - img.created > older_than_days * 86400):
            chosen.append(img)
    if max_bytes is not None:
        left = used_bytes - sum(i.unique for i in chosen)
        for img in pool:
            if left <= max_bytes:
                break
            if img not in chosen:
                chosen.append(img)
                left -= img.unique
    return chosen


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(args, 127, "", str(exc))


def list_images(engine: str) -> list[LocalImage]:
    proc = _run([engine, "images", "--format", "json"])
    try:
        rows = json.loads(proc.stdout or "[]") or []
    except ValueError:
        return []
    uniq = unique_sizes(engine)
    out = []
    for r in rows:
        created = r.get("Created", 0)
        out.append(LocalImage(
            id=r.get("Id") or r.get("ID") or "", names=[n for n in (r.get("Names") or []) if "<none>" not in n],
            created=float(created) if isinstance(created, (int, float)) else 0.0,
            size=int(r.get("Size") or 0),
            shared=uniq.get((r.get("Id") or "")[:12] + ":shared", int(r.get("SharedSize") or 0)),
            labels=r.get("Labels") or {}, containers=int(r.get("Containers") or 0),
        ))
    return out


_SIZE = re.compile(r"^(?P<n>[\d.]+)(?P<u>[kKMGT]?B)$")
_UNITS = {"B": 1, "kB": 1000, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}


def _parse_size(text: str) -> int | None:
    m = _SIZE.match(text.strip())
    return int(float(m["n"]) * _UNITS.get(m["u"], 1)) if m else None


def unique_sizes(engine: str) -> dict[str, int]:
    """Image id prefix (12 hex) -> bytes only that image holds, from ``system df -v`` (podman 4.3's
    ``images --format json`` leaves SharedSize at 0, so Size there counts the shared base every time)."""
    proc = _run([engine, "system", "df", "-v"], timeout=120)
    sizes: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        cols = re.split(r"\s{2,}", line.strip())
        if len(cols) >= 7 and re.fullmatch(r"[0-9a-f]{12}", cols[2]):
            unique, shared = _parse_size(cols[6]), _parse_size(cols[5])
            if unique is not None:
                sizes[cols[2]] = unique
                sizes[cols[2] + ":shared"] = shared or 0
        if line.startswith("Containers space usage"):
            break
    return sizes


def disk_usage(engine: str, images: list[LocalImage] | None = None) -> int:
    """Bytes podman's image storage takes on disk (du of its graph root), else the sum of unique sizes."""
    proc = _run([engine, "info", "--format", "{{.Store.GraphRoot}}"], timeout=30)
    root = proc.stdout.strip()
    if proc.returncode == 0 and root and os.path.isdir(root):
        du = _run(["du", "-sb", root], timeout=120)
        if du.returncode == 0 and du.stdout.split():
            return int(du.stdout.split()[0])
    return sum(i.unique for i in (images if images is not None else list_images(engine)))


def remove(engine: str, chosen: list[LocalImage]) -> list[str]:
    """Remove the images; a cache image that also has other names only loses its cache names."""
    errors = []
    for img in chosen:
        if img.dangling:
            targets = [img.id]
        else:
            # Labels are inherited, so a cache image built FROM a stand-in carries its label: names decide.
            own = [n for n in img.names if n.startswith(CACHE_REPO + ":")] if img.cache else list(img.names)
            targets = own or [img.id]
        proc = _run([engine, "rmi", *targets])
        if proc.returncode != 0:
            errors.append((proc.stderr.strip().splitlines() or ["rmi failed"])[-1][:200])
    return errors


def prune(
    engine: str,
    *,
    older_than_days: float | None = None,
    max_gb: float | None = None,
    include_standins: bool = False,
    now: float | None = None,
) -> PruneResult:
    """``envevo doctor --prune``: without limits every cache image goes (they are rebuilt on demand)."""
    images = list_images(engine)
    before = disk_usage(engine, images)
    chosen = select_prune(
        images, now=now or time.time(), used_bytes=before, older_than_days=older_than_days,
        max_bytes=None if max_gb is None else int(max_gb * GB), include_standins=include_standins,
        all_cache=older_than_days is None and max_gb is None,
    )
    errors = remove(engine, chosen)
    if max_gb is not None:
        more, errs = _until_under(engine, int(max_gb * GB), chosen, include_standins)
        chosen, errors = chosen + more, errors + errs
    after_images = list_images(engine)
    return PruneResult(removed=chosen, images_before=len(images), images_after=len(after_images),
                       bytes_before=before, bytes_after=disk_usage(engine, after_images), errors=errors)


def _until_under(engine: str, max_bytes: int, done: list[LocalImage], include_standins: bool = False,
                 limit: int = 500) -> tuple[list[LocalImage], list[str]]:
    """The size estimate can be off (layers shared with removed images are freed with the last one), so
    measure again and remove the next-oldest candidate while storage is still over budget."""
    removed: list[LocalImage] = []
    errors: list[str] = []
    gone = {i.id for i in done}
    for _ in range(limit):
        images = list_images(engine)
        if disk_usage(engine, images) <= max_bytes:
            break
        pool = sorted((i for i in images if i.containers == 0 and i.id not in gone and not i.dangling
                       and (i.cache or (include_standins and i.standin))), key=lambda i: i.created)
        if not pool:
            break
        gone.add(pool[0].id)
        removed.append(pool[0])
        errors += remove(engine, [pool[0]])
    return removed, errors


def budget_gb() -> float:
    try:
        return float(os.environ.get(BUDGET_ENV) or DEFAULT_BUDGET_GB)
    except ValueError:
        return DEFAULT_BUDGET_GB


def enforce_budget(engine: str, max_gb: float | None = None) -> PruneResult:
    """Keep podman's image storage under ``max_gb`` (default $ENVEVO_IMAGE_BUDGET_GB, else 20 GB) by removing
    the oldest cache images; a no-op, apart from measuring, when storage is under budget. For preflight."""
    limit = budget_gb() if max_gb is None else max_gb
    images = list_images(engine)
    used = disk_usage(engine, images)
    result = PruneResult(images_before=len(images), images_after=len(images), bytes_before=used, bytes_after=used)
    if used <= limit * GB:
        return result
    chosen = select_prune(images, now=time.time(), used_bytes=used, max_bytes=int(limit * GB))
    result.errors = remove(engine, chosen)
    more, errs = _until_under(engine, int(limit * GB), chosen)
    chosen, result.errors = chosen + more, result.errors + errs
    after = list_images(engine)
    result.removed, result.images_after, result.bytes_after = chosen, len(after), disk_usage(engine, after)
    return result
