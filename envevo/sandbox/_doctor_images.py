"""Which external images tasks need, per task: what ``envevo doctor --tasks`` prepares, and names in its failures.

Separate from _doctor: it reads task folders and starts no engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from envevo.sandbox._refs import dockerfile_images
from envevo.task import expand_task_dirs


def images_of(task_dirs: Iterable[Path]) -> list[str]:
    """External images the tasks build FROM or name (build stages excluded, ARG defaults expanded).

    Folders of tasks are walked; Terminal-Bench 1 tasks (Dockerfile at the root) are read too. A task
    that does not load is read for its Dockerfiles directly, so doctor still prepares its images.
    """
    return list(dict.fromkeys(i for images in images_by_task(task_dirs).values() for i in images))


def images_by_task(task_dirs: Iterable[Path]) -> dict[str, list[str]]:
    """Per task dir (by name), the external images it needs: FROM bases, ``COPY --from=`` and ``RUN --mount=…,from=``
    images (build stages are not images), compose ``image:`` values and ``docker_image`` settings."""
    from envevo.errors import TaskError
    from envevo.task import load_task, task_images

    found: dict[str, list[str]] = {}
    for d in expand_task_dirs(task_dirs):
        images: list[str] = []
        try:
            images.extend(task_images(load_task(d)))
        except TaskError:
            pass
        for dockerfile in (Path(d) / "environment" / "Dockerfile", Path(d) / "Dockerfile"):
            if dockerfile.is_file():  # a task that does not load, and what the loader does not read (RUN --mount)
                images.extend(dockerfile_images(dockerfile.read_text(errors="replace")))
        found[Path(d).name if Path(d).name not in found else str(d)] = list(dict.fromkeys(images))
    return found


def image_users(task_dirs: Iterable[Path]) -> dict[str, list[str]]:
    """Image -> the names of the tasks that need it."""
    users: dict[str, list[str]] = {}
    for task, images in images_by_task(task_dirs).items():
        for image in images:
            users.setdefault(image, []).append(task)
    return users
