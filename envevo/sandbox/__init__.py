"""Host-side sandbox preparation: the engine, its settings, base images, leftover containers."""

from envevo.sandbox._doctor import Check, Doctor, Status, images_of
from envevo.sandbox._paths import activate, containers_conf, home

__all__ = ["Check", "Doctor", "Status", "activate", "containers_conf", "home", "images_of"]
