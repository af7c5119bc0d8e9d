"""`envevo export --images`: give every exported task a prebuilt image, named in its task.toml.

For each task dir: the agent's image from environment/, and the verifier's from tests/ when the task has a separate
verifier with its own Dockerfile. Both are built from the same runnable copy a local verification uses (stand-ins
for bases this host cannot pull, heredocs rewritten), and each substitution is stated, because that is what the
image holds. task.toml then names the images:

- `[environment] docker_image`: the agent's;
- `[verifier.environment]`: a copy of `[environment]` (network, cpus, memory…: the verifier's limits must not fall
  back to defaults) with the verifier's `docker_image`.

The Dockerfiles stay: a runner that builds still can, and the image is what it would build here.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envevo.runtime import PublishedImage, publish_image
from envevo.sandbox._preflight import runnable_copy
from envevo.task import ImageMap, load_task, save


class TaskImages(BaseModel):
    task_dir: Path
    agent: PublishedImage
    verifier: PublishedImage | None = None
    substitutions: list[str] = Field(default_factory=list)


def repository_for(registry: str, task_dir: Path) -> str:
    """`registry/<dir name>`, lowercased to what an image repository may hold."""
    name = re.sub(r"[^a-z0-9._-]+", "-", task_dir.name.lower()).strip("._-") or "task"
    return f"{registry.rstrip('/')}/{name}"


def _separate_verifier_dir(config: dict[str, Any], run_dir: Path) -> Path | None:
    verifier = config.get("verifier")
    if not isinstance(verifier, dict):
        verifier = {}
    separate = verifier.get("environment_mode") == "separate" or isinstance(verifier.get("environment"), dict)
    return run_dir / "tests" if separate and (run_dir / "tests" / "Dockerfile").is_file() else None


def _name_images(task_dir: Path, agent: str, verifier: str | None) -> None:
    task = load_task(task_dir)
    config = dict(task.config)
    environment = {**(config.get("environment") or {}), "docker_image": agent}
    config["environment"] = environment
    if verifier is not None:
        config["verifier"] = {**(config.get("verifier") or {}),
                              "environment": {**environment, **(config.get("verifier", {}).get("environment") or {}),
                                              "docker_image": verifier}}
    task.set_config(config)
    save(task, task_dir, overwrite=True)


async def publish_task(task_dir: Path, engine: str, registry: str, *, push: bool,
                       tls_verify: bool | None = None) -> TaskImages:
    """Build (and push) the images of one exported task dir, then name them in its task.toml."""
    task = load_task(task_dir)
    repository = repository_for(registry, task_dir)
    with tempfile.TemporaryDirectory(prefix="envevo-publish-") as tmp:
        run_dir, stated = runnable_copy(task, engine, ImageMap(), Path(tmp))
        agent = await publish_image(engine, run_dir / "environment", repository, push=push, tls_verify=tls_verify)
        tests = _separate_verifier_dir(task.config, run_dir)
        verifier = (await publish_image(engine, tests, f"{repository}-verifier", push=push, tls_verify=tls_verify)
                    if tests is not None else None)
    _name_images(task_dir, agent.reference, verifier.reference if verifier else None)
    # The contexts were the temporary copy's; name the export's own folders.
    agent = agent.model_copy(update={"context": task_dir / "environment"})
    if verifier is not None:
        verifier = verifier.model_copy(update={"context": task_dir / "tests"})
    return TaskImages(task_dir=task_dir, agent=agent, verifier=verifier, substitutions=stated)
