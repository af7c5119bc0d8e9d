"""Every runner envevo knows, by name: the ones that are not trainers (envevo's runtime, Harbor's trial loop) here, each
trainer's in its own package. ``envevo export --runner NAME`` reads this registry; so does the docs table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envevo.schedule import ScheduleError
from envevo.trainers import openenv, prime_rl, skyrl, trl
from envevo.trainers._runner import Capability as C
from envevo.trainers._runner import RunnerSpec, check_tasks, depends, yes

if TYPE_CHECKING:
    from envevo.store import LineageStore

ENVEVO_RUNTIME = RunnerSpec(
    "envevo", "`envevo verify` / `evolve` / `rollout` (envevo's runtime)", None,
    {C.BUILDS_IMAGES: yes(), C.SEPARATE_VERIFIER: yes("from a stopped agent container"),
     C.ARTIFACTS: yes("copied out as archives"), C.NO_NETWORK: yes("`--network=none`"),
     C.PREBUILT_IMAGES: yes("pulled when the task has no Dockerfile")},
    tested="every sandbox test")
HARBOR_ENVEVO_ENV = RunnerSpec(
    "harbor-envevo-env", "`harbor run -e envevo.runtime._local_env:PodmanLocalEnvironment` (Harbor's trial loop, "
    "envevo's environment)", None,
    {C.BUILDS_IMAGES: yes(), C.SEPARATE_VERIFIER: yes(), C.ARTIFACTS: yes(), C.NO_NETWORK: yes(),
     C.PREBUILT_IMAGES: yes("envevo's environment")},
    tested="an export: oracle 1.0 ×2, nop 0.0 ×2, 13 s")
HARBOR = RunnerSpec(
    "harbor", "`harbor run -e podman\\|docker` (Harbor's own environments)", None,
    {C.BUILDS_IMAGES: yes(), C.SEPARATE_VERIFIER: yes(), C.ARTIFACTS: yes(),
     C.NO_NETWORK: depends("only with its network-policy images (below)"),
     C.PREBUILT_IMAGES: depends("Harbor's `docker_image` path; not run here")},
    tested="not here: no registry", remedy="use `-e envevo.runtime._local_env:PodmanLocalEnvironment`")

# Table order: the non-trainers, then the trainers' runners as their packages declare them.
RUNNERS: dict[str, RunnerSpec] = {
    r.name: r for r in (ENVEVO_RUNTIME, HARBOR_ENVEVO_ENV, HARBOR, *skyrl.RUNNERS, *prime_rl.RUNNERS, *trl.RUNNERS,
                        *openenv.RUNNERS)
}


def runner_spec(name: str) -> RunnerSpec:
    """The runner named NAME; one line listing the known names when there is none."""
    try:
        return RUNNERS[name]
    except KeyError:
        raise ScheduleError(f"unknown runner {name!r}; choose one of {', '.join(RUNNERS)}") from None


def check_export(store: LineageStore, runner: str, *, lineage_id: str | None = None, images: bool = False,
                 allow: bool = False) -> dict[str, list[C]]:
    """Before an export is written: refuse (one line) when RUNNER would drop what a task of the store needs, or
    cannot build the images the export leaves to it (``images``: ``--images`` names prebuilt ones)."""
    from envevo.store import export_name

    spec = runner_spec(runner)
    tasks = [(export_name(v.lineage_id, v.generation), store.load_version_task(v.task_hash).config)
             for v in store.versions(lineage_id)]
    return check_tasks(spec, tasks, images=images, allow=allow)

