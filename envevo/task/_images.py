"""Image map for air-gapped or private-registry hosts: rewrite a task's base images in a copy.

Tasks keep standard image names (``ubuntu:24.04``); a host that cannot reach that registry maps
them to what it has (``registry.local/ubuntu:24.04``). The rewrite happens only in a temporary
copy, never in the user's files.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from envevo.errors import TaskError
from envevo.task._compose_file import COMPOSE_NAMES, compose_services, parse_compose
from envevo.task._config import parse_toml, value_at
from envevo.task._files import TaskFile, decode_text
from envevo.task._heredoc import rewrite_heredocs, without_heredoc_bodies
from envevo.task._load import dir_hash, load_task, save
from envevo.task._model import Task

# A loose image reference: [registry[:port]/]path[:tag][@digest]. Rejects spaces, quotes, '='.
_IMAGE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/:@+]*$")
DEFAULT_CONFIG_FILE = "envevo.toml"
_DOCKER_HUB_PREFIXES = ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/")


class ImageMap(BaseModel):
    """Source image -> replacement image. Lookups ignore Docker Hub spelling differences
    (``ubuntu`` = ``ubuntu:latest`` = ``docker.io/library/ubuntu:latest``)."""

    images: dict[str, str] = Field(default_factory=dict)

    def lookup(self, image: str) -> str | None:
        canon = canonical_image(image)
        for source, target in self.images.items():
            if canonical_image(source) == canon:
                return target
        return None

    def merged(self, other: ImageMap) -> ImageMap:
        """This map with ``other``'s entries taking precedence."""
        return ImageMap(images={**self.images, **other.images})

    def __bool__(self) -> bool:
        return bool(self.images)


def canonical_image(image: str) -> str:
    ref = image.strip()
    for prefix in _DOCKER_HUB_PREFIXES:
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
            break
    last = ref.rsplit("/", 1)[-1]
    if "@" not in ref and ":" not in last:
        ref += ":latest"
    return ref


def parse_image_spec(spec: str) -> tuple[str, str]:
    """Parse ``SOURCE=TARGET`` (e.g. ``ubuntu:24.04=registry.local/ubuntu:24.04``)."""
    source, sep, target = spec.partition("=")
    source, target = source.strip(), target.strip()
    if not sep or not source or not target or "=" in target:
        raise TaskError(
            f"invalid image mapping {spec!r}; write SOURCE=TARGET, e.g. ubuntu:24.04=registry.local/ubuntu:24.04"
        )
    for ref in (source, target):
        if not _IMAGE_REF.match(ref):
            raise TaskError(f"invalid image name {ref!r} in mapping {spec!r}; use a reference like registry/name:tag")
    return source, target


def image_map_from_specs(specs: Iterable[str]) -> ImageMap:
    """Build a map from repeatable ``--image SOURCE=TARGET`` options; later specs win."""
    images: dict[str, str] = {}
    for spec in specs:
        source, target = parse_image_spec(spec)
        images[source] = target
    return ImageMap(images=images)


def image_map_from_file(path: str | os.PathLike[str]) -> ImageMap:
    """Read the ``[images]`` table of a config file such as envevo.toml (no table: empty map)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"config file {p} does not exist; check the path") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"cannot read config file {p}: {e}") from e
    table = parse_toml(text, str(p)).get("images", {})
    if not isinstance(table, dict):
        raise TaskError(f'{p}: [images] must be a table of "source" = "target" strings')
    specs = []
    for source, target in table.items():
        if not isinstance(target, str):
            raise TaskError(f'{p}: [images] "{source}" must map to an image name string, got {target!r}')
        specs.append(f"{source}={target}")
    return image_map_from_specs(specs)


def load_image_map(
    specs: Iterable[str] = (),
    config: str | os.PathLike[str] | None = None,
    *,
    default_config: str | os.PathLike[str] | None = DEFAULT_CONFIG_FILE,
) -> ImageMap:
    """The image map for a run: the config file's ``[images]`` (``config``, else ``default_config``
    if that file exists), overridden by ``SOURCE=TARGET`` specs from the command line."""
    from_file = ImageMap()
    if config is not None:
        from_file = image_map_from_file(config)
    elif default_config is not None and Path(default_config).is_file():
        from_file = image_map_from_file(default_config)
    return from_file.merged(image_map_from_specs(specs))


# ---- rewriting --------------------------------------------------------------------------------

_FROM = re.compile(r"^(?P<head>\s*FROM\s+(?:--\S+\s+)*)(?P<image>[^\s#]+)(?P<tail>.*)$", re.IGNORECASE)
_AS = re.compile(r"^\s+AS\s+(?P<stage>\S+)", re.IGNORECASE)
_COPY_FROM = re.compile(r"(?P<head>^\s*COPY\s+(?:--\S+\s+)*?--from=)(?P<image>[^\s]+)", re.IGNORECASE)
_ARG = re.compile(r"^(?P<head>\s*ARG\s+[A-Za-z_][A-Za-z0-9_]*=)(?P<q>[\"']?)(?P<image>[^\s\"']+)(?P=q)(?P<tail>.*)$", re.IGNORECASE)
_COMPOSE_IMAGE = re.compile(r"^(?P<head>\s*image:\s*)(?P<q>[\"']?)(?P<image>[^\s\"'#]+)(?P=q)(?P<tail>\s*(?:#.*)?)$")


def rewrite_dockerfile(text: str, image_map: ImageMap) -> str:
    """Rewrite base images in FROM (incl. ``--platform=… x AS y``), ``COPY --from=image`` and
    ``ARG X=image`` defaults. References to earlier build stages are left alone."""
    stages: set[str] = set()
    out = []
    for line in text.splitlines(keepends=True):
        body, nl = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if m := _FROM.match(body):
            image = m["image"]
            if image.lower() not in stages and (target := image_map.lookup(image)):
                body = f"{m['head']}{target}{m['tail']}"
            if a := _AS.match(m["tail"]):
                stages.add(a["stage"].lower())
        elif m := _COPY_FROM.match(body):
            image = m["image"]
            if image.lower() not in stages and not image.isdigit() and (target := image_map.lookup(image)):
                body = f"{m['head']}{target}{body[m.end():]}"
        elif m := _ARG.match(body):
            if target := image_map.lookup(m["image"]):
                body = f"{m['head']}{m['q']}{target}{m['q']}{m['tail']}"
        out.append(body + nl)
    return "".join(out)


def rewrite_compose(text: str, image_map: ImageMap) -> str:
    """Rewrite ``image:`` values line by line, keeping the file's formatting and comments."""
    out = []
    for line in text.splitlines(keepends=True):
        body, nl = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if (m := _COMPOSE_IMAGE.match(body)) and (target := image_map.lookup(m["image"])):
            body = f"{m['head']}{m['q']}{target}{m['q']}{m['tail']}"
        out.append(body + nl)
    return "".join(out)


def _is_dockerfile(name: str) -> bool:
    lower = name.lower()
    return lower in ("dockerfile", "containerfile") or lower.startswith("dockerfile.") or lower.endswith(".dockerfile")


def rewrite_images(task: Task, image_map: ImageMap) -> Task:
    """A copy of ``task`` with every mapped image replaced; ``task`` itself is untouched."""
    new = task.model_copy(deep=True)
    if not image_map:
        return new
    for path, f in task.files.items():
        name = path.rsplit("/", 1)[-1]
        text = decode_text(f.data) if (_is_dockerfile(name) or name in COMPOSE_NAMES) else None
        if text is None:
            continue
        rewritten = rewrite_dockerfile(text, image_map) if _is_dockerfile(name) else rewrite_compose(text, image_map)
        if rewritten != text:
            new.files[path] = TaskFile(data=rewritten.encode("utf-8"), executable=f.executable)
    config = copy.deepcopy(task.config)
    changed = False
    for env in _environment_tables(config):
        image = env.get("docker_image")
        if isinstance(image, str) and (target := image_map.lookup(image)):
            env["docker_image"] = target
            changed = True
    if changed:
        new.config = config
    return new


def rewrite_task_heredocs(task: Task) -> tuple[Task, int]:
    """A copy of ``task`` whose Dockerfiles use no BuildKit heredocs (see ``_heredoc``), and how many were rewritten.
    A body copied into the image becomes a generated file next to its Dockerfile. An unterminated heredoc is the
    task's error."""
    new = task.model_copy(deep=True)
    count = 0
    for path, f in task.files.items():
        name = path.rsplit("/", 1)[-1]
        text = decode_text(f.data) if _is_dockerfile(name) else None
        if text is None or "<<" not in text:
            continue
        try:
            done = rewrite_heredocs(text)
        except ValueError as e:
            raise TaskError(f"{path}: {e}") from None
        if not done.count:
            continue
        count += done.count
        new.files[path] = TaskFile(data=done.text.encode("utf-8"), executable=f.executable)
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        for rel, data in done.files.items():
            new.files[folder + rel] = TaskFile(data=data)
    return new, count


def _environment_tables(config: Mapping[str, object]) -> list[dict[str, object]]:
    tables = [config.get("environment"), value_at(config, "verifier", "environment")]
    steps = config.get("steps")
    tables += [value_at(step, "verifier", "environment") for step in (steps if isinstance(steps, list) else [])]
    return [t for t in tables if isinstance(t, dict)]


def materialize(task: Task | str | os.PathLike[str], image_map: ImageMap | Mapping[str, str],
                dest: str | os.PathLike[str] | None = None) -> Path:
    """Write a copy of ``task`` (a Task or a task dir) with images rewritten; returns its path.

    Without ``dest`` the copy goes to a fresh temporary directory that the caller removes.
    The original task files are only read.
    """
    if not isinstance(image_map, ImageMap):
        image_map = ImageMap(images=dict(image_map))
    if not isinstance(task, Task):
        task = load_task(task)
    if dest is None:
        dest = Path(tempfile.mkdtemp(prefix="envevo-task-")) / _safe_name(task.name)
    return save(rewrite_images(task, image_map), dest)


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "task"


def prepare_runnable(task: Task, image_map: ImageMap | None, dest_root: str | os.PathLike[str]) -> Path:
    """A directory Harbor can run for ``task``.

    A Harbor task loaded from disk that no image mapping touches runs in place (Harbor reads every
    schema version itself). Otherwise (TB1 import, in-memory task, rewritten images) a copy is
    written under ``dest_root``, named by content hash so a re-run reuses it.
    """
    rewritten = rewrite_images(task, image_map or ImageMap())
    unchanged = rewritten.render_files() == task.render_files()
    if task.source_format == "harbor" and task.source is not None and unchanged:
        try:
            if dir_hash(task.source) == task.content_hash():  # not edited since it was loaded
                return task.source
        except TaskError:
            pass
    digest = rewritten.content_hash()
    dest = Path(dest_root) / f"{_safe_name(task.name)}-{digest[:12]}"
    if dest.is_dir():
        try:
            if dir_hash(dest) == digest:
                return dest
        except TaskError:
            pass
    return save(rewritten, dest, overwrite=True)


_GLOBAL_ARG = re.compile(r"^\s*ARG\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)\s*$", re.IGNORECASE)
_VAR = re.compile(r"\$(?:\{(?P<a>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<d>[^}]*))?\}|(?P<b>[A-Za-z_][A-Za-z0-9_]*))")


def expand_image_args(image: str, args: dict[str, str]) -> str | None:
    """``${X}``, ``$X`` and ``${X:-default}`` from global ARG defaults; None when a variable has no value."""
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        name = m["a"] or m["b"]
        if args.get(name):
            return args[name]
        if m["d"] is not None:
            return m["d"]
        missing = True
        return ""

    out = _VAR.sub(sub, image)
    return None if missing or "$" in out else out


def task_images(task: Task) -> list[str]:
    """Every image a task names: FROM and ``COPY --from`` images (not build stages), compose
    ``image:`` values and ``docker_image`` settings. ``FROM ${X}`` is resolved from a global
    ``ARG X=default``; other variables are skipped. CRLF Dockerfiles read like LF ones."""
    found: list[str] = []
    for path, f in sorted(task.files.items()):
        name = path.rsplit("/", 1)[-1]
        text = decode_text(f.data)
        if text is None:
            continue
        if _is_dockerfile(name):
            lines = without_heredoc_bodies(text).split("\n")
            stages: set[str] = set()
            args: dict[str, str] = {}
            seen_from = False
            for line in lines:
                if (m := _GLOBAL_ARG.match(line)) and not seen_from:
                    args[m["name"]] = m["value"]
                elif m := _FROM.match(line):
                    seen_from = True
                    image = expand_image_args(m["image"], args) if "$" in m["image"] else m["image"]
                    if image and image.lower() not in stages and image.lower() != "scratch":
                        found.append(image)
                    if a := _AS.match(m["tail"]):
                        stages.add(a["stage"].lower())
                elif (m := _COPY_FROM.match(line)) and m["image"].lower() not in stages and not m["image"].isdigit():
                    found.append(m["image"])
        elif name in COMPOSE_NAMES:
            found.extend(compose_pulled_images(text, path))
    found.extend(image for env in _environment_tables(task.config) if isinstance(image := env.get("docker_image"), str))
    return [i for i in dict.fromkeys(found) if "$" not in i]


def compose_pulled_images(text: str, where: str) -> list[str]:
    """The ``image:`` of each compose service that does not build its own: a service with ``build:`` names in
    ``image:`` the tag its build gets, not a base to pull. A file that is no valid compose mapping is read line by
    line (the loader reports what is wrong with it)."""
    try:
        services = compose_services(parse_compose(text, where))
    except TaskError:
        return [m["image"] for line in text.replace("\r\n", "\n").split("\n") if (m := _COMPOSE_IMAGE.match(line))]
    return [str(svc["image"]) for svc in services.values()
            if isinstance(svc, dict) and isinstance(svc.get("image"), str) and not svc.get("build")]
