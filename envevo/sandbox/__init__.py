"""Host-side sandbox preparation: the engine, its settings, base images and stand-ins, leftover containers,
the image budget, and trust of a TLS-intercepting proxy's CA."""

from envevo.sandbox._doctor import Doctor
from envevo.sandbox._doctor_check import Check, Status
from envevo.sandbox._doctor_images import image_users, images_by_task, images_of
from envevo.sandbox._paths import activate, containers_conf, home
from envevo.sandbox._preflight import (
    builder_knows_heredocs,
    harbor_ready,
    keep_image_budget,
    preflight,
    runnable_copy,
    substitutions,
)
from envevo.sandbox._prune import LocalImage, PruneResult, enforce_budget, prune, select_prune
from envevo.sandbox._publish import TaskImages, publish_task
from envevo.sandbox._refs import ImageRef, dockerfile_bases, dockerfile_images, parse_ref
from envevo.sandbox._standins import (
    StandinEntry,
    StandinPlan,
    choose_python_suite,
    ensure_standin,
    load_registry,
    plan_standin,
    standins_for,
    ubuntu_suite,
)

__all__ = [
    "Check", "Doctor", "ImageRef", "LocalImage", "PruneResult", "StandinEntry", "StandinPlan", "Status",
    "activate", "choose_python_suite", "containers_conf", "dockerfile_bases", "dockerfile_images", "enforce_budget",
    "ensure_standin", "home", "image_users", "images_by_task", "images_of", "keep_image_budget", "load_registry",
    "parse_ref", "plan_standin", "preflight", "prune",
    "builder_knows_heredocs", "harbor_ready", "runnable_copy", "select_prune", "standins_for", "substitutions",
    "ubuntu_suite", "TaskImages", "publish_task",
]
