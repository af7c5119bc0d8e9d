"""Where envevo keeps host-side sandbox state, and the process settings every command applies."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from envevo._home import home


def containers_conf() -> Path:
    """The project-local containers.conf written by `envevo doctor --fix` where the host needs one."""
    return home() / "containers.conf"


def activate() -> None:
    """Apply the sandbox settings to this process and the engines it starts.

    - CONTAINERS_CONF names our containers.conf when doctor wrote one and the user set none.
    - ENVEVO_HOST_CA_BUNDLE names the host CA bundle when `envevo doctor --trust-host-ca` recorded one
      (the runtime then mounts it into builds and containers).
    - The interpreter's bin folder goes on PATH, so the podman-compose installed beside envevo is
      found even when the virtual environment is not activated.
    """
    conf = containers_conf()
    if "CONTAINERS_CONF" not in os.environ and conf.is_file():
        os.environ["CONTAINERS_CONF"] = str(conf)
    if "ENVEVO_HOST_CA_BUNDLE" not in os.environ:
        from envevo.sandbox._tls import recorded_bundle

        if (bundle := recorded_bundle()) is not None:
            os.environ["ENVEVO_HOST_CA_BUNDLE"] = str(bundle)
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + path
